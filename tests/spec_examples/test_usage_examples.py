"""The spec's "Usage Examples" (001, its end), run as written with ``ace_next`` -> ``ace_workers``.

Each test body starts with the example's own lines; the asserts after them check
what the example promises. The Recursive Reflector + Opik example is in
test_rr_opik_example.py; the integrations' examples join when those land.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path

from ace_workers import Skillbook
from tests.support.llms import SPEC_LESSON, ScriptedCompletion


def lessons_in(path: str) -> list[str]:
    """The contents of the skills saved at ``path``."""
    return [skill.content for skill in Skillbook.load_from_file(path).skills()]


def test_trace_analyser_learns_from_browser_use_history(
    litellm_replies: ScriptedCompletion, workdir: Path
) -> None:
    from ace_workers import LiteLLMClient, Reflector, SkillManager, TraceAnalyser, wrap_with_instructor

    llm = wrap_with_instructor(LiteLLMClient(model="gpt-4o-mini"))
    # Raw traces — plain dicts, no enforced schema
    traces = [
        {
            "task": "Find the cheapest flight to Tokyo",
            "output": "$450 on ANA, departing March 15",
            "feedback": "Correct price found in 8 steps",
            "reasoning": "Step 1: Navigate to Google Flights...",
        },
        {
            "task": "Book a hotel in Shibuya",
            "output": "Failed: could not find checkout button",
            "feedback": "Task failed after 15 steps — checkout button was behind a cookie modal",
            "reasoning": "Step 1: Navigate to Booking.com...",
        },
    ]
    # Analyse — raw traces go directly to the Reflector via ctx.trace
    analyser = TraceAnalyser.from_roles(reflector=Reflector(llm), skill_manager=SkillManager(llm))
    results = analyser.run(traces, epochs=2)
    analyser.save("travel_agent.json")

    assert len(results) == 4
    assert [result.error for result in results] == [None] * 4
    assert SPEC_LESSON in lessons_in("travel_agent.json")
    # The trace's own keys (task, output) reach the Reflector, not only the six known ones.
    prompts = "\n".join(litellm_replies.prompts)
    assert "Find the cheapest flight to Tokyo" in prompts
    assert "$450 on ANA, departing March 15" in prompts
    assert "checkout button was behind a cookie modal" in prompts


def geography_samples() -> list:
    from ace_workers import Sample

    return [
        Sample(question="Capital of France?", ground_truth="Paris"),
        Sample(question="Largest ocean?", ground_truth="Pacific"),
    ]


def test_ace_live_qa_training_with_an_environment(litellm_replies: ScriptedCompletion, workdir: Path) -> None:
    from ace_workers import (
        ACE,
        Agent,
        LiteLLMClient,
        Reflector,
        SimpleEnvironment,
        SkillManager,
        wrap_with_instructor,
    )

    llm = wrap_with_instructor(LiteLLMClient(model="gpt-4o-mini"))
    samples = geography_samples()
    # Environment provided at construction — EvaluateStep uses it to generate feedback
    ace = ACE.from_roles(
        agent=Agent(llm),
        reflector=Reflector(llm),
        skill_manager=SkillManager(llm),
        environment=SimpleEnvironment(),
    )
    results = ace.run(samples, epochs=3)
    ace.save("geography.json")

    assert len(results) == 6
    assert [result.error for result in results] == [None] * 6
    assert {result.output.agent_output.final_answer for result in results} == {"Paris"}
    # SimpleEnvironment compared "Paris" with each ground truth: its feedback reached the Reflector.
    feedback = [result.output.trace["feedback"] for result in results]
    assert any("Correct" in text for text in feedback)
    assert any("Incorrect" in text for text in feedback)
    assert SPEC_LESSON in lessons_in("geography.json")


def test_ace_without_an_environment_learns_from_ground_truth(
    litellm_replies: ScriptedCompletion, workdir: Path
) -> None:
    from ace_workers import ACE, Agent, LiteLLMClient, Reflector, SkillManager, wrap_with_instructor

    llm = wrap_with_instructor(LiteLLMClient(model="gpt-4o-mini"))
    samples = geography_samples()
    # No environment — trace still contains agent output + ground truth
    ace = ACE.from_roles(
        agent=Agent(llm),
        reflector=Reflector(llm),
        skill_manager=SkillManager(llm),
    )
    results = ace.run(samples, epochs=3)

    assert [result.error for result in results] == [None] * 6
    assert SPEC_LESSON in [skill.content for skill in ace.skillbook.skills()]
    assert "Pacific" in "\n".join(litellm_replies.prompts)  # the ground truth reached the Reflector


def load_samples_from_csv(path: str) -> Iterator:
    """The user's loader of the example: a generator of samples."""
    from ace_workers import Sample

    with open(path, newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            yield Sample(question=row["question"], ground_truth=row["answer"])


def test_ace_single_pass_over_a_generator(litellm_replies: ScriptedCompletion, workdir: Path) -> None:
    from ace_workers import ACE, Agent, LiteLLMClient, Reflector, SkillManager, wrap_with_instructor

    llm = wrap_with_instructor(LiteLLMClient(model="gpt-4o-mini"))
    Path("eval_set.csv").write_text("question,answer\nCapital of France?,Paris\nCapital of Italy?,Rome\n")
    # Any Iterable works with epochs=1 (consumed once, not replayed)
    samples = load_samples_from_csv("eval_set.csv")  # returns a list or generator
    ace = ACE.from_roles(agent=Agent(llm), reflector=Reflector(llm), skill_manager=SkillManager(llm))
    results = ace.run(samples, epochs=1)

    assert [result.output.sample.question for result in results] == [
        "Capital of France?",
        "Capital of Italy?",
    ]
    assert [result.error for result in results] == [None, None]


PARAPHRASE = "Answer only with the name of the place."


def test_ace_with_checkpoints_and_deduplication(litellm_replies: ScriptedCompletion, workdir: Path) -> None:
    from ace_workers import (
        ACE,
        Agent,
        LiteLLMClient,
        Reflector,
        SimpleEnvironment,
        SkillManager,
        wrap_with_instructor,
    )
    from ace_workers.deduplication import DeduplicationManager
    from ace_workers.protocols.deduplication import DeduplicationConfig

    llm = wrap_with_instructor(LiteLLMClient(model="gpt-4o-mini"))
    samples = geography_samples() * 5
    ace = ACE.from_roles(
        agent=Agent(llm),
        reflector=Reflector(llm),
        skill_manager=SkillManager(llm),
        environment=SimpleEnvironment(),
        dedup_manager=DeduplicationManager(DeduplicationConfig(similarity_threshold=0.85)),
        checkpoint_dir="./checkpoints",
        checkpoint_interval=10,
    )
    # Not in the example: a paraphrase of the lesson the LLM will add, which only embedding
    # deduplication can recognise (identical text is refused at apply anyway).
    ace.skillbook.add_skill("answers", PARAPHRASE)
    # Pipeline: Agent → Evaluate → Reflect → Tag → Update → Apply → Deduplicate → Checkpoint
    results = ace.run(samples, epochs=3)

    assert [result.error for result in results] == [None] * 30
    # Deduplication merged the lesson into the older paraphrase. (The scripted LLM proposes the
    # lesson on every sample, so one applied after the last deduplication may add it again.)
    every = ace.skillbook.skills(include_invalid=True)
    merged_away = [skill.content for skill in every if skill.status != "active"]
    active = [skill.content for skill in every if skill.status == "active"]
    assert merged_away
    assert set(merged_away) == {SPEC_LESSON}
    assert PARAPHRASE in active
    assert set(active) <= {SPEC_LESSON, PARAPHRASE}
    # Checkpoints every 10 samples: 30 samples give 3 of them plus the latest.
    saved = sorted(path.name for path in Path("checkpoints").iterdir())
    assert saved == ["checkpoint_10.json", "checkpoint_20.json", "checkpoint_30.json", "latest.json"]


def test_acelitellm_asks_learns_and_learns_from_feedback(
    litellm_replies: ScriptedCompletion, workdir: Path
) -> None:
    from ace_workers import ACELiteLLM, Sample, SimpleEnvironment

    ace = ACELiteLLM.from_model("gpt-4o-mini")
    # Direct Q&A (no pipeline)
    answer = ace.ask("What is the capital of France?")
    # Batch learning (delegates to ACE runner)
    samples = [
        Sample(question="Capital of France?", ground_truth="Paris"),
        Sample(question="Largest ocean?", ground_truth="Pacific"),
    ]
    ace.learn(samples, environment=SimpleEnvironment(), epochs=3)
    # Manual feedback learning from last ask()
    ace.ask("What is 2+2?")
    ace.learn_from_feedback("The answer should be 4", ground_truth="4")
    ace.save("learned.json")

    assert answer == "Paris"
    assert SPEC_LESSON in lessons_in("learned.json")
    prompts = "\n".join(litellm_replies.prompts)
    assert "The answer should be 4" in prompts  # the feedback reached the Reflector
    assert "What is 2+2?" in prompts


def test_fire_and_forget_returns_answers_while_learning_continues(
    litellm_replies: ScriptedCompletion, workdir: Path, capsys: object
) -> None:
    from ace_workers import ACE, Agent, LiteLLMClient, Reflector, SkillManager, wrap_with_instructor

    llm = wrap_with_instructor(LiteLLMClient(model="gpt-4o-mini"))
    samples = geography_samples()
    ace = ACE.from_roles(
        agent=Agent(llm),
        reflector=Reflector(llm),
        skill_manager=SkillManager(llm),
    )
    # wait=False: returns after foreground steps (Agent + Evaluate)
    results = ace.run(samples, epochs=1, wait=False)
    answers = [r.output.agent_output.final_answer for r in results]
    stats = ace.learning_stats
    # Block when you need the skillbook finalised
    ace.wait_for_background(timeout=60.0)
    ace.save("learned.json")

    assert answers == ["Paris", "Paris"]
    assert set(stats) >= {"active", "completed"}
    assert ace.learning_stats["completed"] == 2
    assert SPEC_LESSON in lessons_in("learned.json")


def test_mixed_workflow_batch_then_live(litellm_replies: ScriptedCompletion, workdir: Path) -> None:
    from ace_workers import ACE, LiteLLMClient, Sample, Skillbook, TraceAnalyser, wrap_with_instructor
    from ace_workers.implementations import Agent, Reflector, SkillManager

    llm = wrap_with_instructor(LiteLLMClient(model="gpt-4o-mini"))
    historical_traces = [{"task": "Capital of Spain?", "output": "Madrid", "feedback": "correct"}]
    live_samples = [Sample(question="Capital of France?", ground_truth="Paris")]

    reflector = Reflector(llm)
    skill_manager = SkillManager(llm)
    # Phase 1: build skillbook from historical traces
    skillbook = Skillbook()
    analyser = TraceAnalyser.from_roles(
        reflector=reflector,
        skill_manager=skill_manager,
        skillbook=skillbook,
    )
    analyser.run(historical_traces, epochs=3)
    learned_in_batch = [skill.content for skill in skillbook.skills()]
    calls_in_batch = len(litellm_replies.prompts)
    # Phase 2: deploy with live learning (reuse the evolved skillbook)
    ace = ACE.from_roles(
        agent=Agent(llm),
        reflector=reflector,
        skill_manager=skill_manager,
        skillbook=skillbook,
    )
    ace.run(live_samples, epochs=1)
    ace.save("production.json")

    assert learned_in_batch == [SPEC_LESSON]
    # The live agent's prompt carried the skill learned from the historical traces.
    live_prompts = "\n".join(litellm_replies.prompts[calls_in_batch:])
    assert SPEC_LESSON in live_prompts
    assert "Capital of France?" in live_prompts
    saved = Skillbook.load_from_file("production.json").skills()
    assert [skill.content for skill in saved] == [SPEC_LESSON]
