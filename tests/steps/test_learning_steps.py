"""ReflectStep and UpdateStep: the two pure learning steps, and their missing-field errors."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from ace_workers.core import ACEStepContext, AgentOutput, Sample, UpdateOperation
from ace_workers.steps import MissingFieldError, ReflectStep, UpdateStep
from tests.support.roles import FakeReflector, FakeSkillManager, manager_output, reflection

MakeCtx = Callable[..., ACEStepContext]

TRACE = {
    "question": "What is 2+2?",
    "context": "arithmetic",
    "ground_truth": "4",
    "reasoning": "Following [math-00001].",
    "answer": "5",
    "skill_ids": ["math-00001"],
    "feedback": "Incorrect: expected '4', got '5'.",
}


def test_reflect_step_unpacks_a_dict_trace_into_typed_arguments(make_ctx: MakeCtx) -> None:
    reflector = FakeReflector()
    ctx = make_ctx(trace=dict(TRACE))
    out = ReflectStep(reflector)(ctx)
    (call,) = reflector.calls
    assert call["question"] == "What is 2+2?"
    assert call["agent_output"] == AgentOutput(
        reasoning="Following [math-00001].", final_answer="5", skill_ids=["math-00001"]
    )
    assert call["ground_truth"] == "4"
    assert call["feedback"] == "Incorrect: expected '4', got '5'."
    assert call["skillbook"] is ctx.skillbook
    assert call["trace"] == {"context": "arithmetic"}  # the one field with no typed argument
    assert out.reflection is not None
    assert [(t.id, t.tag) for t in out.reflection.skill_tags] == [("math-00001", "helpful")]


def test_reflect_step_tolerates_missing_and_none_keys_in_a_dict_trace(make_ctx: MakeCtx) -> None:
    reflector = FakeReflector()
    ReflectStep(reflector)(make_ctx(trace={"question": None, "answer": None, "skill_ids": None}))
    (call,) = reflector.calls
    assert call["question"] == ""
    assert call["agent_output"] == AgentOutput(reasoning="", final_answer="", skill_ids=[])
    assert call["ground_truth"] is None
    assert call["feedback"] is None


@pytest.mark.parametrize("trace", [[{"role": "user", "text": "hi"}], "a transcript", ("a", 1)])
def test_reflect_step_passes_a_raw_trace_as_is(make_ctx: MakeCtx, trace: object) -> None:
    reflector = FakeReflector()
    out = ReflectStep(reflector)(make_ctx(trace=trace))
    (call,) = reflector.calls
    assert call["trace"] is trace
    assert call["question"] == ""
    assert call["agent_output"] == AgentOutput(reasoning="", final_answer="")
    assert out.reflection is not None


def test_reflect_step_without_trace_names_step_and_field(make_ctx: MakeCtx) -> None:
    with pytest.raises(MissingFieldError, match=r"ReflectStep needs ctx\.trace") as info:
        ReflectStep(FakeReflector())(make_ctx())
    assert (info.value.step, info.value.field) == ("ReflectStep", "trace")


def test_reflect_step_without_skillbook_names_step_and_field(make_ctx: MakeCtx) -> None:
    with pytest.raises(MissingFieldError, match=r"ReflectStep needs ctx\.skillbook"):
        ReflectStep(FakeReflector())(make_ctx(trace=dict(TRACE), skillbook=None))


def test_update_step_calls_update_skills_with_progress_and_question_context(make_ctx: MakeCtx) -> None:
    manager = FakeSkillManager()
    ctx = make_ctx(
        trace=dict(TRACE), reflection=reflection(), epoch=2, total_epochs=3, step_index=4, total_steps=10
    )
    UpdateStep(manager)(ctx)
    (call,) = manager.calls
    assert call["reflection"] is ctx.reflection
    assert call["skillbook"] is ctx.skillbook
    assert call["progress"] == "Epoch 2/3, sample 4/10"
    assert call["question_context"] == (
        "question: What is 2+2?\ncontext: arithmetic\nground_truth: 4\n"
        "feedback: Incorrect: expected '4', got '5'."
    )


def test_update_step_progress_shows_unknown_total_as_question_mark(make_ctx: MakeCtx) -> None:
    manager = FakeSkillManager()
    UpdateStep(manager)(make_ctx(reflection=reflection(), step_index=7, total_steps=None))
    assert manager.calls[0]["progress"] == "Epoch 1/1, sample 7/?"


def test_update_step_question_context_falls_back_to_the_sample_then_to_nothing(make_ctx: MakeCtx) -> None:
    manager = FakeSkillManager()
    step = UpdateStep(manager)
    step(make_ctx(reflection=reflection(), trace=["raw", "events"]))
    step(make_ctx(reflection=reflection(), sample="/tmp/trace.jsonl", trace=["raw"]))
    assert [c["question_context"] for c in manager.calls] == [
        "question: What is 2+2?\ncontext: arithmetic",
        "",
    ]


def test_update_step_stamps_provenance_on_a_new_output(make_ctx: MakeCtx) -> None:
    original = manager_output(
        UpdateOperation(type="ADD", section="checks", content="Re-add the digits."),
        UpdateOperation(
            type="TAG", skill_id="math-00001", metadata={"helpful": 1}, insight_source={"model": "m"}
        ),
    )
    manager = FakeSkillManager(operations=original.update.operations)
    ctx = make_ctx(reflection=reflection(), epoch=2, step_index=3, global_sample_index=13)
    out = UpdateStep(manager)(ctx)
    assert out.skill_manager_output is not None
    sources = [op.insight_source for op in out.skill_manager_output.update.operations]
    provenance = {
        "actor": "skill_manager",
        "sample_id": "s-1",
        "epoch": 2,
        "step_index": 3,
        "global_sample_index": 13,
        "insight": "k",  # the Reflector's key insight
    }
    assert sources == [provenance, {"model": "m", **provenance}]
    # The SkillManager's operations are untouched.
    assert [op.insight_source for op in original.update.operations] == [None, {"model": "m"}]
    assert out.skill_manager_output.update.reasoning == "one lesson"
    assert [op.type for op in out.skill_manager_output.update.operations] == ["ADD", "TAG"]


def test_update_step_provenance_omits_sample_id_when_the_sample_has_none(make_ctx: MakeCtx) -> None:
    out = UpdateStep(FakeSkillManager())(
        make_ctx(sample=Sample(question="q"), reflection=reflection(), global_sample_index=1)
    )
    assert out.skill_manager_output is not None
    (op,) = out.skill_manager_output.update.operations
    assert op.insight_source == {
        "actor": "skill_manager",
        "epoch": 1,
        "step_index": 0,
        "global_sample_index": 1,
        "insight": "k",
    }


def test_update_step_without_reflection_names_step_and_field(make_ctx: MakeCtx) -> None:
    with pytest.raises(MissingFieldError, match=r"UpdateStep needs ctx\.reflection") as info:
        UpdateStep(FakeSkillManager())(make_ctx())
    assert (info.value.step, info.value.field) == ("UpdateStep", "reflection")
