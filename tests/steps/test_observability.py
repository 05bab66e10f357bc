"""ObservabilityStep: one INFO record per sample, whatever the pipeline's shape."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest

from ace_workers.core import ACEStepContext, AgentOutput, UpdateOperation
from ace_workers.steps import MissingFieldError, ObservabilityStep
from tests.support.roles import manager_output

MakeCtx = Callable[..., ACEStepContext]
LOGGER = "ace_workers.steps.observability"


def _record(caplog: pytest.LogCaptureFixture, ctx: ACEStepContext) -> logging.LogRecord:
    caplog.clear()
    with caplog.at_level(logging.INFO, logger=LOGGER):
        assert ObservabilityStep()(ctx) is ctx
    (record,) = [r for r in caplog.records if r.name == LOGGER]
    assert record.levelno == logging.INFO
    return record


def test_logs_the_metrics_of_a_full_sample(make_ctx: MakeCtx, caplog: pytest.LogCaptureFixture) -> None:
    ctx = make_ctx(
        agent_output=AgentOutput(reasoning="r", final_answer="4"),
        skill_manager_output=manager_output(
            UpdateOperation(type="ADD", section="s", content="c"),
            UpdateOperation(type="REMOVE", skill_id="x"),
        ),
        global_sample_index=7,
        epoch=2,
        total_epochs=3,
        step_index=2,
        total_steps=5,
    )
    record = _record(caplog, ctx)
    assert record.getMessage() == (
        "sample 7 (epoch 2/3, step 2/5): answer present, 2 operations, skillbook 1 skill"
    )
    assert record.ace_metrics == {  # type: ignore[attr-defined]
        "global_sample_index": 7,
        "epoch": 2,
        "total_epochs": 3,
        "step_index": 2,
        "total_steps": 5,
        "answer_present": True,
        "operations": 2,
        "skillbook_size": 1,
    }


def test_reads_missing_fields_with_guards(make_ctx: MakeCtx, caplog: pytest.LogCaptureFixture) -> None:
    record = _record(caplog, make_ctx(sample=None))
    assert record.getMessage() == (
        "sample 0 (epoch 1/1, step 0/?): answer missing, 0 operations, skillbook 1 skill"
    )


@pytest.mark.parametrize(
    ("fields", "present"),
    [
        ({"agent_output": AgentOutput(reasoning="r", final_answer="  ")}, False),
        ({"trace": {"answer": "done"}}, True),
        ({"trace": {"answer": None}}, False),
        ({"trace": ["raw", "events"]}, False),
    ],
)
def test_answer_present_comes_from_the_agent_output_or_a_dict_trace(
    make_ctx: MakeCtx, caplog: pytest.LogCaptureFixture, fields: dict[str, object], present: bool
) -> None:
    record = _record(caplog, make_ctx(**fields))
    assert record.ace_metrics["answer_present"] is present  # type: ignore[attr-defined]


def test_without_skillbook_names_step_and_field(make_ctx: MakeCtx) -> None:
    with pytest.raises(MissingFieldError, match=r"ObservabilityStep needs ctx\.skillbook"):
        ObservabilityStep()(make_ctx(skillbook=None))
