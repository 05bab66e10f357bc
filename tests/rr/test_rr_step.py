"""RRStep with a scripted LLM: the loop, its feedback, its record and its failure."""

from __future__ import annotations

import pytest

from ace_workers.core import ACEStepContext, AgentOutput, ReflectorOutput, Skillbook, SkillbookView
from ace_workers.errors import RecursiveReflectorError, RetriesExhausted
from ace_workers.protocols import ReflectorLike
from ace_workers.roles import SkillManager
from ace_workers.rr import RR_TITLE, RRConfig, RRStep, SandboxLimits
from ace_workers.runners import TraceAnalyser
from ace_workers.sim import SimulatedLLM
from pipeline import Pipeline
from tests.support.llms import ScriptedTextLLM, python_block

pytestmark = pytest.mark.slow  # each iteration starts a sandbox interpreter

FAST = RRConfig(max_iterations=3, limits=SandboxLimits(timeout_s=1.5, memory_mb=256))
RULE = "For zorb questions, reverse the digits of the input."
QUESTION = "Solve the zorb puzzle. Input: 1234"
LOG = ["echoed the input", "user: the digits should be reversed"]
TRACE = {
    "question": QUESTION,
    "answer": "1234",
    "ground_truth": "4321",
    "feedback": "Incorrect.",
    "log": LOG,
}
INSPECT = python_block("print(trace['log'][-1])\nprint(answer, ground_truth)")
LEARN = python_block(
    "FINAL({'reasoning': 'the answer echoed the input', 'key_insight': " + repr(RULE) + ",\n"
    "       'extracted_learnings': [{'learning': "
    + repr(RULE)
    + ", 'evidence': answer + ' vs ' + ground_truth}]})"
)
ITERATION_KEYS = {"iteration", "code", "stdout", "stderr", "error", "final_called", "killed", "duration_s"}


def reflect(llm: ScriptedTextLLM, config: RRConfig = FAST) -> ReflectorOutput:
    return RRStep(llm, config).reflect(
        question=QUESTION,
        agent_output=AgentOutput(reasoning="I echo.", final_answer="1234"),
        skillbook=SkillbookView(Skillbook()),
        ground_truth="4321",
        trace={"log": LOG},
    )


def test_rr_step_is_a_reflector_and_a_step() -> None:
    rr = RRStep(ScriptedTextLLM([]))
    assert isinstance(rr, ReflectorLike)
    assert (rr.requires, rr.provides) == (frozenset({"trace", "skillbook"}), frozenset({"reflection"}))


def test_the_trace_analyser_learns_through_rr_and_records_the_iterations() -> None:
    llm = ScriptedTextLLM([INSPECT, LEARN])
    analyser = TraceAnalyser.from_roles(
        reflector=RRStep(llm, FAST), skill_manager=SkillManager(SimulatedLLM())
    )
    (result,) = analyser.run([TRACE])
    assert result.ok, result.error
    assert [s.content for s in analyser.skillbook.skills()] == [RULE]
    assert result.output is not None
    assert result.output.reflection is not None
    rr_trace = result.output.reflection.raw["rr_trace"]
    assert (rr_trace["iterations_used"], rr_trace["max_iterations"], rr_trace["final_called"]) == (2, 3, True)
    assert [set(item) for item in rr_trace["iterations"]] == [ITERATION_KEYS, ITERATION_KEYS]
    assert rr_trace["iterations"][0]["stdout"] == "user: the digits should be reversed\n1234 4321\n"
    assert [item["final_called"] for item in rr_trace["iterations"]] == [False, True]


def test_the_extracted_learning_is_computed_in_the_sandbox() -> None:
    reflection = reflect(ScriptedTextLLM([LEARN]))
    assert reflection.extracted_learnings[0].evidence == "1234 vs 4321"


def test_the_reflection_reports_the_model_usage_and_turns_as_role_outputs_do() -> None:
    # What the metrics and spans read: the answering model, tokens over every turn, one attempt a turn.
    raw = reflect(ScriptedTextLLM([INSPECT, LEARN])).raw
    assert raw["model"] == "scripted"
    assert raw["usage"] == {"prompt_tokens": 20, "completion_tokens": 10, "total_tokens": 30}
    assert raw["attempts"] == 2
    assert raw["cost"] is None  # the scripted client prices no call


def test_what_the_code_printed_is_in_the_next_prompt() -> None:
    llm = ScriptedTextLLM([INSPECT, LEARN])
    reflect(llm)
    assert llm.prompts[0].startswith(RR_TITLE + "\n")
    assert "user: the digits should be reversed" not in llm.prompts[0].split("## Iterations")[1]
    assert "user: the digits should be reversed\n1234 4321" in llm.prompts[1].split("## Iterations")[1]


def test_no_final_within_max_iterations_is_a_clear_error() -> None:
    llm = ScriptedTextLLM([python_block("print('looking')"), python_block("1 / 0")])
    with pytest.raises(RecursiveReflectorError, match=r"after 2 iterations.*ZeroDivisionError") as caught:
        reflect(llm, RRConfig(max_iterations=2, limits=FAST.limits))
    assert isinstance(caught.value, RetriesExhausted)
    assert (caught.value.iterations, caught.value.rr_trace["final_called"]) == (2, False)
    assert len(llm.prompts) == 2


def test_an_invalid_final_is_fed_back_and_fixed_on_the_next_iteration() -> None:
    llm = ScriptedTextLLM(
        [
            python_block("FINAL({'key_insight': 'no reasoning'})"),
            python_block("FINAL({'reasoning': 'fixed'})"),
        ]
    )
    reflection = reflect(llm)
    assert reflection.reasoning == "fixed"
    first = reflection.raw["rr_trace"]["iterations"][0]
    assert (first["final_called"], first["error"]) == (
        True,
        "FINAL value is not a valid reflection: reasoning: Field required",
    )
    assert "reasoning: Field required" in llm.prompts[1]


def test_a_reply_without_code_is_fed_back() -> None:
    llm = ScriptedTextLLM(["I think the answer was wrong.", python_block("FINAL({'reasoning': 'ok'})")])
    reflection = reflect(llm)
    assert reflection.raw["rr_trace"]["iterations"][0]["error"].startswith(
        "the reply holds no ```python code block"
    )
    assert "the reply holds no ```python code block" in llm.prompts[1]


def test_a_timed_out_iteration_is_recorded_and_reported_to_the_llm() -> None:
    # Asleep, not a busy loop: the same timeout, without taking a core from the rest of the suite.
    asleep = python_block("import time\ntime.sleep(60)")
    llm = ScriptedTextLLM([asleep, python_block("FINAL({'reasoning': 'ok'})")])
    reflection = reflect(llm, RRConfig(max_iterations=2, limits=SandboxLimits(timeout_s=1)))
    assert reflection.raw["rr_trace"]["iterations"][0]["killed"] == "timeout"
    assert "Error: TimeoutError" in llm.prompts[1]


def test_rr_step_runs_as_a_pipeline_step() -> None:
    pipeline: Pipeline[ACEStepContext] = Pipeline([RRStep(ScriptedTextLLM([LEARN]), FAST)])
    context = ACEStepContext(skillbook=SkillbookView(Skillbook()), trace=TRACE, step_index=1, total_steps=1)
    (result,) = pipeline.run([context])
    pipeline.wait_for_background()
    assert result.ok, result.error
    assert result.output is not None
    assert result.output.reflection is not None
    assert result.output.reflection.key_insight == RULE
