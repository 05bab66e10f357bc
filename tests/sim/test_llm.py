"""SimulatedLLM: role behaviour on the real prompts, injected faults, records."""

from __future__ import annotations

import json
import threading
import time

import pytest
from pydantic import BaseModel, ValidationError

from ace_workers.core import (
    AgentOutput,
    ReflectorOutput,
    Sample,
    SimpleEnvironment,
    Skillbook,
    SkillbookView,
    SkillManagerOutput,
)
from ace_workers.errors import LLMError, RetriesExhausted
from ace_workers.protocols import LLMClientLike
from ace_workers.roles import Agent, Reflector, SkillManager
from ace_workers.sim import TOPICS, SimulatedCompletion, SimulatedLLM, make_tasks

ZORB = TOPICS[0]


@pytest.fixture
def sample() -> Sample:
    return next(s for s in make_tasks(10, seed=4) if s.metadata["topic"] == ZORB.name)


def answer(llm: SimulatedLLM, sample: Sample, book: Skillbook) -> AgentOutput:
    return Agent(llm).generate(sample.question, sample.context, SkillbookView(book))


def reflect_on(llm: SimulatedLLM, sample: Sample, book: Skillbook, output: AgentOutput) -> ReflectorOutput:
    result = SimpleEnvironment().evaluate(sample, output)
    return Reflector(llm).reflect(
        sample.question, output, book, ground_truth=result.ground_truth, feedback=result.feedback
    )


def test_it_is_an_llm_client() -> None:
    assert isinstance(SimulatedLLM(), LLMClientLike)


# -- agent -------------------------------------------------------------------------------
def test_agent_echoes_the_input_without_the_rule_skill(sample: Sample) -> None:
    book = Skillbook()
    book.add_skill("zorb", "For zorb questions, think carefully.")  # names the topic, not the rule
    book.add_skill("math", TOPICS[2].rule)  # another topic's rule
    output = answer(SimulatedLLM(), sample, book)
    assert output.final_answer == sample.metadata["input"] != sample.ground_truth
    assert output.skill_ids == []


def test_agent_answers_right_and_cites_the_rule_skill(sample: Sample) -> None:
    book = Skillbook()
    book.add_skill("math", "Round at the end.")
    skill = book.add_skill("puzzles", "Zorb puzzles: reverse the digits of the input number.")
    output = answer(SimulatedLLM(), sample, book)
    assert output.final_answer == sample.ground_truth
    assert output.skill_ids == [skill.id]


def test_agent_uses_a_rule_stated_in_the_reflection(sample: Sample) -> None:
    reflection = ReflectorOutput(reasoning="Wrong.", key_insight=ZORB.rule)
    output = Agent(SimulatedLLM()).generate(sample.question, "", Skillbook(), reflection=reflection)
    assert output.final_answer == sample.ground_truth


def test_agent_trusts_a_skill_only_with_enough_net_helpful_votes(sample: Sample) -> None:
    llm = SimulatedLLM(trust_threshold=2)
    book = Skillbook()
    skill = book.add_skill("zorb", ZORB.rule)
    book.tag_skill(skill.id, "helpful")
    assert answer(llm, sample, book).final_answer != sample.ground_truth
    book.tag_skill(skill.id, "helpful")
    assert answer(llm, sample, book).final_answer == sample.ground_truth
    book.tag_skill(skill.id, "harmful")
    assert answer(llm, sample, book).final_answer != sample.ground_truth


def test_agent_does_not_know_unknown_tasks() -> None:
    output = Agent(SimulatedLLM()).generate("What is the capital of France?", "", Skillbook())
    assert output.final_answer == "unknown"


# -- reflector ------------------------------------------------------------------------------
def test_reflection_on_a_wrong_answer_states_the_rule(sample: Sample) -> None:
    llm = SimulatedLLM()
    book = Skillbook()
    reflection = reflect_on(llm, sample, book, answer(llm, sample, book))
    assert reflection.key_insight == ZORB.rule
    assert [item.learning for item in reflection.extracted_learnings] == [ZORB.rule]
    assert sample.metadata["input"] in reflection.extracted_learnings[0].evidence
    assert reflection.skill_tags == []


def test_reflection_tags_cited_skills_helpful_when_right_harmful_when_wrong(sample: Sample) -> None:
    llm = SimulatedLLM()
    book = Skillbook()
    skill = book.add_skill("zorb", ZORB.rule)
    right = answer(llm, sample, book)
    reflection = reflect_on(llm, sample, book, right)
    assert [(t.id, t.tag) for t in reflection.skill_tags] == [(skill.id, "helpful")]
    assert reflection.extracted_learnings == []
    wrong = right.model_copy(update={"final_answer": "0"})
    reflection = reflect_on(llm, sample, book, wrong)
    assert [(t.id, t.tag) for t in reflection.skill_tags] == [(skill.id, "harmful")]


def test_reflection_judges_by_feedback_without_ground_truth(sample: Sample) -> None:
    llm = SimulatedLLM()
    output = AgentOutput(reasoning="guess", final_answer=sample.metadata["input"])
    reflection = Reflector(llm).reflect(sample.question, output, Skillbook(), feedback="Incorrect.")
    assert reflection.key_insight == ZORB.rule


def test_reflection_learns_nothing_from_a_ground_truth_that_breaks_the_rule(sample: Sample) -> None:
    output = AgentOutput(reasoning="guess", final_answer="1")
    reflection = Reflector(SimulatedLLM()).reflect(sample.question, output, Skillbook(), ground_truth="2")
    assert reflection.extracted_learnings == []


def test_reflection_learns_from_a_bare_trace(sample: Sample) -> None:
    trace = {"question": sample.question, "note": "recorded elsewhere"}
    empty = AgentOutput(reasoning="", final_answer="")
    reflection = Reflector(SimulatedLLM()).reflect("", empty, Skillbook(), trace=trace)
    assert reflection.key_insight == ZORB.rule


# -- skill manager ---------------------------------------------------------------------------
def test_skill_manager_adds_a_learning_once_and_not_twice(sample: Sample) -> None:
    llm = SimulatedLLM()
    book = Skillbook()
    reflection = reflect_on(llm, sample, book, answer(llm, sample, book))
    manager = SkillManager(llm)
    first = manager.update_skills(reflection, SkillbookView(book), progress="Epoch 1/1, sample 1/2")
    assert [(op.type, op.section, op.content) for op in first.update.operations] == [
        ("ADD", "zorb", ZORB.rule)
    ]
    (skill_id,) = book.apply_update(first.update).added
    second = manager.update_skills(reflection, SkillbookView(book), progress="Epoch 1/1, sample 2/2")
    assert [(op.type, op.skill_id, op.metadata) for op in second.update.operations] == [
        ("TAG", skill_id, {"helpful": 1})
    ]
    book.apply_update(second.update)
    assert len(book) == 1


def test_skill_manager_leaves_the_reflections_tags_to_the_tag_step(sample: Sample) -> None:
    book = Skillbook()
    skill = book.add_skill("zorb", ZORB.rule)
    reflection = ReflectorOutput.model_validate(
        {
            "reasoning": "r",
            "skill_tags": [{"id": skill.id, "tag": "harmful"}, {"id": "ghost-00009", "tag": "helpful"}],
        }
    )
    output = SkillManager(SimulatedLLM()).update_skills(reflection, book)
    assert output.update.operations == []


def test_skill_manager_files_an_unrecognised_learning_under_general_once_then_tags_it() -> None:
    reflection = ReflectorOutput.model_validate(
        {"reasoning": "r", "extracted_learnings": [{"learning": "Read the question twice."}] * 2}
    )
    book = Skillbook()
    output = SkillManager(SimulatedLLM()).update_skills(reflection, book)
    assert [(op.type, op.section) for op in output.update.operations] == [("ADD", "general")]
    (skill_id,) = book.apply_update(output.update).added
    again = SkillManager(SimulatedLLM()).update_skills(reflection, book)
    assert [(op.type, op.skill_id, op.metadata) for op in again.update.operations] == [
        ("TAG", skill_id, {"helpful": 1})
    ]


# -- faults ----------------------------------------------------------------------------------
def outcomes(llm: SimulatedLLM, n: int) -> list[str]:
    results = []
    for _ in range(n):
        try:
            output = Agent(llm).generate("q", "", Skillbook())
        except RetriesExhausted as exc:
            results.append(f"exhausted after {exc.attempts}")
        except LLMError:
            results.append("failed")
        else:
            results.append(f"ok after {output.raw['attempts']}")
    return results


def test_faults_are_deterministic_for_a_seed() -> None:
    def make() -> SimulatedLLM:
        return SimulatedLLM(failure_rate=0.3, malformed_rate=0.5, seed=11)

    first = outcomes(make(), 60)
    assert first == outcomes(make(), 60)
    assert first != outcomes(SimulatedLLM(failure_rate=0.3, malformed_rate=0.5, seed=12), 60)
    kinds = {result.split(" after")[0] for result in first}
    assert kinds == {"ok", "failed", "exhausted"}
    assert "ok after 2" in first  # a malformed attempt, then a valid one


def test_failure_rate_one_always_raises_llm_error() -> None:
    assert outcomes(SimulatedLLM(failure_rate=1.0), 5) == ["failed"] * 5


def test_malformed_output_retries_then_raises_with_context() -> None:
    llm = SimulatedLLM(malformed_rate=1.0)
    with pytest.raises(RetriesExhausted) as info:
        llm.complete_structured("# Agent\n## Question\nq\n", AgentOutput, max_retries=3)
    error = info.value
    assert error.attempts == 3
    assert error.what == "AgentOutput"
    assert isinstance(error.last_error, ValidationError)
    assert isinstance(error.last_completion, str)
    assert error.usage["prompt_tokens"] > 0
    assert llm.call_count(AgentOutput) == 1


def test_latency_is_slept_per_call() -> None:
    llm = SimulatedLLM(latency=0.02)
    started = time.perf_counter()
    llm.complete("hello")
    llm.complete("hello")
    assert time.perf_counter() - started >= 0.04


@pytest.mark.parametrize(
    "kwargs", [{"failure_rate": -0.1}, {"malformed_rate": 1.5}, {"latency": -1.0}, {"trust_threshold": -1}]
)
def test_invalid_settings_fail_at_construction(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        SimulatedLLM(**kwargs)  # type: ignore[arg-type]


def test_an_unsupported_response_model_is_refused() -> None:
    class Other(BaseModel):
        x: int

    with pytest.raises(TypeError, match="Other"):
        SimulatedLLM().complete_structured("prompt", Other)


# -- records -----------------------------------------------------------------------------------
def test_calls_prompts_and_token_usage_are_recorded(sample: Sample) -> None:
    llm = SimulatedLLM()
    book = Skillbook()
    output = answer(llm, sample, book)
    reflect_on(llm, sample, book, output)
    answer(llm, sample, book)
    assert llm.call_count(AgentOutput) == 2
    assert llm.call_count("ReflectorOutput") == 1
    assert llm.call_count(SkillManagerOutput) == 0
    assert llm.call_count() == 3
    prompt = llm.last_prompt(AgentOutput)
    assert prompt is not None
    assert sample.question in prompt
    assert llm.last_prompt(SkillManagerOutput) is None
    usage = output.raw["usage"]
    assert usage["prompt_tokens"] == len(prompt) // 4
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    assert llm.usage["calls"] == 3
    assert llm.usage["prompt_tokens"] >= 3 * usage["prompt_tokens"] - 10


def test_complete_answers_a_role_prompt_in_json_and_anything_else_in_text(sample: Sample) -> None:
    llm = SimulatedLLM()
    prompt = Agent(llm).build_prompt(sample.question, "", Skillbook())
    reply = llm.complete(prompt)
    assert isinstance(reply, SimulatedCompletion)
    assert json.loads(reply.text)["final_answer"] == sample.metadata["input"]
    assert "simulated" in llm.complete("Hello?").text
    assert llm.call_count("text") == 2


def test_concurrent_calls_are_all_counted(sample: Sample) -> None:
    llm = SimulatedLLM(failure_rate=0.2, seed=3)
    book = Skillbook()
    errors: list[BaseException] = []

    def work() -> None:
        for _ in range(25):
            try:
                answer(llm, sample, book)
            except LLMError as exc:
                errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert llm.call_count(AgentOutput) == 200
    assert 0 < len(errors) < 200
