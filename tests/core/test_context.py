"""The read-only SkillbookView, the frozen ACEStepContext, samples and the simple environment."""

from __future__ import annotations

import dataclasses

import pytest

from ace_workers.core import (
    ACESample,
    ACEStepContext,
    AgentOutput,
    Sample,
    SimpleEnvironment,
    Skillbook,
    SkillbookView,
)
from pipeline import StepContext

WRITE_METHODS = ["add_skill", "update_skill", "tag_skill", "remove_skill", "apply_update", "save_to_file"]


@pytest.mark.parametrize("name", WRITE_METHODS)
def test_skillbook_view_has_no_write_method(book: Skillbook, name: str) -> None:
    view = SkillbookView(book)
    with pytest.raises(AttributeError):
        getattr(view, name)


def test_skillbook_view_reflects_the_live_skillbook(book: Skillbook) -> None:
    view = SkillbookView(book)
    assert len(view) == 2
    book.add_skill("edge", "Mind empty input")
    assert len(view) == 3
    assert "edge-00003" in view.as_prompt()
    assert view.get_skill("edge-00003").content == "Mind empty input"


def test_step_context_is_frozen(book: Skillbook) -> None:
    ctx = ACEStepContext(sample=Sample(question="2+2?"), skillbook=SkillbookView(book))
    with pytest.raises(dataclasses.FrozenInstanceError):
        ctx.epoch = 2  # type: ignore[misc]


def test_step_context_is_a_pipeline_step_context() -> None:
    assert isinstance(ACEStepContext(), StepContext)


def test_step_context_has_exactly_the_ace_fields() -> None:
    assert [f.name for f in dataclasses.fields(ACEStepContext)] == [
        "sample",
        "metadata",
        "skillbook",
        "trace",
        "agent_output",
        "reflection",
        "skill_manager_output",
        "epoch",
        "total_epochs",
        "step_index",
        "total_steps",
        "global_sample_index",
    ]


def test_sample_satisfies_the_ace_sample_protocol() -> None:
    assert isinstance(Sample(question="2+2?", ground_truth="4"), ACESample)


def _answer(text: str) -> AgentOutput:
    return AgentOutput(reasoning="Worked it out.", final_answer=text)


def test_simple_environment_accepts_an_answer_differing_only_in_case_and_spacing() -> None:
    result = SimpleEnvironment().evaluate(
        Sample(question="Capital?", ground_truth="New York"), _answer("  new   YORK ")
    )
    assert result.feedback.startswith("Correct")
    assert result.metrics == {"accuracy": 1.0}


def test_simple_environment_rejects_a_different_answer() -> None:
    result = SimpleEnvironment().evaluate(Sample(question="Capital?", ground_truth="Paris"), _answer("Lyon"))
    assert result.feedback.startswith("Incorrect")
    assert "Paris" in result.feedback
    assert result.metrics == {"accuracy": 0.0}
    assert result.ground_truth == "Paris"


def test_simple_environment_without_ground_truth_gives_neutral_feedback() -> None:
    result = SimpleEnvironment().evaluate(Sample(question="Opinion?"), _answer("Yes"))
    assert "correct" not in result.feedback.lower()
    assert result.metrics == {}
    assert result.ground_truth is None


def test_a_view_on_first_use_reads_its_skillbook_once_and_only_when_used() -> None:
    book = Skillbook()
    book.add_skill("math", "Check units.")
    reads: list[int] = []

    def read() -> SkillbookView:
        reads.append(1)
        return SkillbookView(book)

    view = SkillbookView.on_first_use(read)
    assert repr(view) == "SkillbookView(not read yet)"
    assert reads == []
    assert [skill.content for skill in view.skills()] == ["Check units."]
    assert len(view) == 1
    assert reads == [1]
    assert repr(view) == "SkillbookView(1 skills)"
