"""AgentStep and EvaluateStep: the agent's call, the trace they bundle, and missing fields."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from ace_workers.core import (
    ACEStepContext,
    AgentOutput,
    EnvironmentResult,
    Sample,
    SimpleEnvironment,
    SkillbookView,
    TaskEnvironment,
)
from ace_workers.errors import AceError
from ace_workers.steps import AgentStep, EvaluateStep, MissingFieldError
from tests.support.roles import FakeAgent

MakeCtx = Callable[..., ACEStepContext]


def test_agent_step_calls_the_agent_with_the_sample_and_the_view(make_ctx: MakeCtx, sample: Sample) -> None:
    agent = FakeAgent(answer="4")
    ctx = make_ctx()
    out = AgentStep(agent)(ctx)
    assert out.agent_output == AgentOutput(
        reasoning="Following [math-00001].", final_answer="4", skill_ids=["math-00001"]
    )
    (call,) = agent.calls
    assert call["question"] == "What is 2+2?"
    assert call["context"] == "arithmetic"
    assert call["sample"] is sample
    assert isinstance(call["skillbook"], SkillbookView)
    assert call["skillbook"] is ctx.skillbook
    # The rest of the context is carried over unchanged.
    assert out.replace(agent_output=None) == ctx


def test_agent_step_without_skillbook_names_step_and_field(make_ctx: MakeCtx) -> None:
    with pytest.raises(MissingFieldError, match=r"AgentStep needs ctx\.skillbook") as info:
        AgentStep(FakeAgent())(make_ctx(skillbook=None))
    assert (info.value.step, info.value.field) == ("AgentStep", "skillbook")
    assert isinstance(info.value, AceError)
    assert isinstance(info.value, ValueError)


def test_agent_step_without_sample_names_step_and_field(make_ctx: MakeCtx) -> None:
    with pytest.raises(MissingFieldError, match=r"AgentStep needs ctx\.sample"):
        AgentStep(FakeAgent())(make_ctx(sample=None))


def test_agent_step_rejects_a_sample_without_question_and_context(make_ctx: MakeCtx) -> None:
    with pytest.raises(TypeError, match=r"AgentStep needs ctx\.sample with question.*got str"):
        AgentStep(FakeAgent())(make_ctx(sample="just a task string"))


def _answered(make_ctx: MakeCtx, answer: str = "4") -> ACEStepContext:
    return make_ctx(
        agent_output=AgentOutput(
            reasoning="Following [math-00001].", final_answer=answer, skill_ids=["math-00001"]
        )
    )


def test_evaluate_step_without_environment_bundles_the_trace(make_ctx: MakeCtx) -> None:
    out = EvaluateStep()(_answered(make_ctx))
    assert out.trace == {
        "question": "What is 2+2?",
        "context": "arithmetic",
        "ground_truth": "4",
        "reasoning": "Following [math-00001].",
        "answer": "4",
        "skill_ids": ["math-00001"],
    }


@pytest.mark.parametrize(
    ("answer", "feedback"), [("4", "Correct."), ("5", "Incorrect: expected '4', got '5'.")]
)
def test_evaluate_step_adds_the_environments_feedback(make_ctx: MakeCtx, answer: str, feedback: str) -> None:
    out = EvaluateStep(SimpleEnvironment())(_answered(make_ctx, answer))
    assert isinstance(out.trace, dict)
    assert out.trace["feedback"] == feedback
    assert out.trace["answer"] == answer


def test_evaluate_step_passes_sample_and_agent_output_to_the_environment(
    make_ctx: MakeCtx, sample: Sample
) -> None:
    seen: list[tuple[Sample, AgentOutput]] = []

    class Recording(TaskEnvironment):
        def evaluate(self, sample: Sample, agent_output: AgentOutput) -> EnvironmentResult:
            seen.append((sample, agent_output))
            return EnvironmentResult(feedback="")

    ctx = _answered(make_ctx)
    out = EvaluateStep(Recording())(ctx)
    assert seen == [(sample, ctx.agent_output)]
    # Empty feedback is still feedback: the key is there whenever an environment is.
    assert isinstance(out.trace, dict)
    assert out.trace["feedback"] == ""


def test_evaluate_step_trace_does_not_share_the_agent_outputs_list(make_ctx: MakeCtx) -> None:
    ctx = _answered(make_ctx)
    out = EvaluateStep()(ctx)
    assert isinstance(out.trace, dict)
    out.trace["skill_ids"].append("x")
    assert ctx.agent_output is not None
    assert ctx.agent_output.skill_ids == ["math-00001"]


def test_evaluate_step_without_agent_output_names_step_and_field(make_ctx: MakeCtx) -> None:
    with pytest.raises(MissingFieldError, match=r"EvaluateStep needs ctx\.agent_output"):
        EvaluateStep()(make_ctx())
