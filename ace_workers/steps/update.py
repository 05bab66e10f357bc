"""UpdateStep: the SkillManager turns the reflection into skillbook operations, stamped with provenance."""

from __future__ import annotations

from typing import Any

from ..core.context import ACESample, ACEStepContext
from ..core.outputs import SkillManagerOutput
from ..protocols import SkillManagerLike
from ._checks import require_field
from .provenance_source import SKILL_MANAGER, sample_source

__all__ = ["UpdateStep"]

# Trace keys that tell the SkillManager what kind of question the reflection came from.
_QUESTION_KEYS = ("question", "context", "ground_truth", "feedback")


class UpdateStep:
    """Provide ``skill_manager_output`` from ``ctx.reflection``; pure, the skillbook is only read.

    Every operation's ``insight_source`` is stamped with where it came from
    (steps/provenance_source.py: sample, epoch, indices, trace id, key insight,
    actor ``skill_manager``; on a fleet also batch and recipe) on a new output
    object; the SkillManager's own output is left untouched. ``max_workers``
    is 1 because the SkillManager decides against the current skillbook and
    concurrent calls would decide against stale state.
    """

    requires = frozenset({"reflection", "skillbook"})
    provides = frozenset({"skill_manager_output"})
    max_workers = 1
    exclusive = True  # decides against the current skillbook: calls never overlap

    def __init__(self, skill_manager: SkillManagerLike) -> None:
        self.skill_manager = skill_manager

    def __call__(self, ctx: ACEStepContext) -> ACEStepContext:
        progress = f"Epoch {ctx.epoch}/{ctx.total_epochs}, sample {ctx.step_index}/{ctx.total_steps or '?'}"
        output = self.skill_manager.update_skills(
            reflection=require_field(ctx.reflection, "UpdateStep", "reflection"),
            skillbook=require_field(ctx.skillbook, "UpdateStep", "skillbook"),
            question_context=_describe_question(ctx),
            progress=progress,
        )
        return ctx.replace(skill_manager_output=_with_provenance(output, sample_source(ctx, SKILL_MANAGER)))

    def __repr__(self) -> str:
        return f"UpdateStep({self.skill_manager!r})"


def _describe_question(ctx: ACEStepContext) -> str:
    """The ``question_context`` for the SkillManager: from a dict trace, else from the sample."""
    values: dict[str, object] = {}
    trace = ctx.trace
    sample: object = ctx.sample
    if isinstance(trace, dict):
        values = {key: trace.get(key) for key in _QUESTION_KEYS}
    elif isinstance(sample, ACESample):
        values = {"question": sample.question, "context": sample.context}
    return "\n".join(f"{key}: {value}" for key, value in values.items() if value not in (None, ""))


def _with_provenance(output: SkillManagerOutput, provenance: dict[str, Any]) -> SkillManagerOutput:
    # model_copy never touches the original: the SkillManager may keep or log its own output.
    operations = [
        op.model_copy(update={"insight_source": {**(op.insight_source or {}), **provenance}})
        for op in output.update.operations
    ]
    return output.model_copy(update={"update": output.update.model_copy(update={"operations": operations})})
