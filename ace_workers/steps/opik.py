"""OpikStep: one Opik trace per sample, with what the pipeline did to it."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ..core.context import ACESample, ACEStepContext
from ..observability.opik import OpikLogging
from ._checks import require_field

if TYPE_CHECKING:
    pass

__all__ = ["OpikStep"]

logger = logging.getLogger(__name__)

TRACE_NAME = "ace_sample"
# Keys of a dict trace (EvaluateStep's, learn_from_feedback's) that describe the task and the answer.
_INPUT_KEYS = ("question", "context", "ground_truth", "feedback")
_OUTPUT_KEYS = ("answer", "reasoning", "skill_ids")
# A trace of another shape is logged as its repr, cut to this many characters.
_MAX_TRACE_REPR = 2000


class OpikStep(OpikLogging):
    """Log one Opik trace per sample: the task, the answer, the reflection and the skillbook changes.

    A side-effect step to append after the learning tail (``extra_steps``):
    it needs only ``skillbook`` and reads every other field with guards, so
    it fits any pipeline shape. Used directly it is a no-op (saying why, once)
    when opik is not installed or ``OPIK_DISABLED`` is set; ``strict=True``
    raises instead (see :func:`~ace_workers.observability.connect_opik`).
    It does not register the LiteLLM callback: call
    :func:`~ace_workers.observability.register_opik_litellm_callback` for
    per-LLM-call tokens and cost. The client sends in the background; call
    :meth:`flush` before the process exits.
    """

    requires = frozenset({"skillbook"})
    provides: frozenset[str] = frozenset()

    def __call__(self, ctx: ACEStepContext) -> ACEStepContext:
        skillbook = require_field(ctx.skillbook, "OpikStep", "skillbook")
        if self._client is None:
            return ctx
        try:
            self._client.trace(
                name=TRACE_NAME,
                project_name=self.project_name,
                end_time=datetime.now(UTC),
                input=_trace_input(ctx),
                output=_trace_output(ctx),
                metadata={
                    **_pipeline_metadata(ctx),
                    "skillbook_size": len(skillbook),
                    **_learning_metadata(ctx),
                },
                tags=self.tags or None,
            )
        except Exception:  # tracing must never cost a sample its learning
            logger.warning("OpikStep could not log sample %d", ctx.global_sample_index, exc_info=True)
        return ctx


def _trace_input(ctx: ACEStepContext) -> dict[str, Any]:
    """The task: from a dict trace, else from the sample, else the trace's repr."""
    trace, sample = ctx.trace, ctx.sample
    if isinstance(trace, dict):
        return {key: trace[key] for key in _INPUT_KEYS if trace.get(key) not in (None, "")}
    if isinstance(sample, ACESample):
        return {"question": sample.question, "context": sample.context, "ground_truth": sample.ground_truth}
    return {} if trace is None else {"trace": repr(trace)[:_MAX_TRACE_REPR]}


def _trace_output(ctx: ACEStepContext) -> dict[str, Any]:
    """The answer: the agent's output if this pipeline ran the agent, else what a dict trace recorded."""
    output = ctx.agent_output
    if output is not None:
        return {
            "answer": output.final_answer,
            "reasoning": output.reasoning,
            "skill_ids": list(output.skill_ids),
        }
    if isinstance(ctx.trace, dict):
        return {key: ctx.trace[key] for key in _OUTPUT_KEYS if key in ctx.trace}
    return {}


def _pipeline_metadata(ctx: ACEStepContext) -> dict[str, Any]:
    """Where the sample sits in the run."""
    metadata: dict[str, Any] = {
        "epoch": ctx.epoch,
        "total_epochs": ctx.total_epochs,
        "step_index": ctx.step_index,
        "total_steps": ctx.total_steps,
        "global_sample_index": ctx.global_sample_index,
    }
    sample_id = getattr(ctx.sample, "id", None)
    if sample_id is not None:
        metadata["sample_id"] = sample_id
    return metadata


def _learning_metadata(ctx: ACEStepContext) -> dict[str, Any]:
    """What the Reflector concluded and which operations the SkillManager decided, when they ran."""
    metadata: dict[str, Any] = {}
    reflection = ctx.reflection
    if reflection is not None:
        metadata["reflection"] = {
            "key_insight": reflection.key_insight,
            "error_identification": reflection.error_identification,
            "root_cause_analysis": reflection.root_cause_analysis,
            "correct_approach": reflection.correct_approach,
            "learnings": [learning.learning for learning in reflection.extracted_learnings],
            "skill_tags": [tag.model_dump() for tag in reflection.skill_tags],
        }
    manager_output = ctx.skill_manager_output
    if manager_output is not None:
        operations = manager_output.update.operations
        metadata["operations"] = [op.model_dump(mode="json", exclude_defaults=True) for op in operations]
        metadata["operation_count"] = len(operations)
    return metadata
