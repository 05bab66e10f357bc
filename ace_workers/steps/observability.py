"""ObservabilityStep: one INFO log record of metrics per sample."""

from __future__ import annotations

import logging
from typing import Any

from ..core.context import ACEStepContext
from ..counts import counted
from ._checks import require_field

__all__ = ["ObservabilityStep"]

logger = logging.getLogger(__name__)


class ObservabilityStep:
    """Log the sample index, epoch, whether there is an answer, operation count and skillbook size.

    Needs only ``skillbook``; the other fields depend on the pipeline's shape
    and are read with guards. The metrics also ride on the record as
    ``record.ace_metrics`` (a dict) for log handlers that ship structured data.
    """

    requires = frozenset({"skillbook"})
    provides: frozenset[str] = frozenset()

    def __call__(self, ctx: ACEStepContext) -> ACEStepContext:
        metrics = _sample_metrics(ctx)
        logger.info(
            "sample %d (epoch %d/%d, step %d/%s): answer %s, %s, skillbook %s",
            metrics["global_sample_index"],
            metrics["epoch"],
            metrics["total_epochs"],
            metrics["step_index"],
            metrics["total_steps"] if metrics["total_steps"] is not None else "?",
            "present" if metrics["answer_present"] else "missing",
            counted(metrics["operations"], "operation"),
            counted(metrics["skillbook_size"], "skill"),
            extra={"ace_metrics": metrics},
        )
        return ctx

    def __repr__(self) -> str:
        return "ObservabilityStep()"


def _sample_metrics(ctx: ACEStepContext) -> dict[str, Any]:
    """The per-sample metrics ObservabilityStep logs."""
    skillbook = require_field(ctx.skillbook, "ObservabilityStep", "skillbook")
    return {
        "global_sample_index": ctx.global_sample_index,
        "epoch": ctx.epoch,
        "total_epochs": ctx.total_epochs,
        "step_index": ctx.step_index,
        "total_steps": ctx.total_steps,
        "answer_present": _has_answer(ctx),
        "operations": _operation_count(ctx),
        "skillbook_size": len(skillbook),
    }


def _has_answer(ctx: ACEStepContext) -> bool:
    if ctx.agent_output is not None:
        return bool(ctx.agent_output.final_answer.strip())
    trace = ctx.trace
    if isinstance(trace, dict):
        answer = trace.get("answer")
        return isinstance(answer, str) and bool(answer.strip())
    return False


def _operation_count(ctx: ACEStepContext) -> int:
    output = ctx.skill_manager_output
    return 0 if output is None else len(output.update.operations)
