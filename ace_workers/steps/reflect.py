"""ReflectStep: the Reflector analyses the trace; the learning tail starts here, in the background."""

from __future__ import annotations

from typing import Any

from ..core.context import ACEStepContext, SkillbookView
from ..core.outputs import AgentOutput, ReflectorOutput
from ..protocols import ReflectorLike
from ._checks import require_field
from .trace_fields import read_trace

__all__ = ["ReflectStep"]


class ReflectStep:
    """Provide ``reflection`` from ``ctx.trace``; pure, and the pipeline's async boundary.

    A dict trace (from EvaluateStep, a ToTrace converter, a recorded log) is
    unpacked into the Reflector's typed arguments under their common names
    (``task`` or ``input`` for the question, ``output`` for the answer, ...:
    see :data:`~ace_workers.steps.trace_fields.TRACE_ALIASES`), and its other
    fields go through the ``trace`` keyword into the prompt's Trace section.
    Any other trace object is passed as-is through ``trace``.
    """

    requires = frozenset({"trace", "skillbook"})
    provides = frozenset({"reflection"})
    async_boundary = True
    max_workers = 3

    def __init__(self, reflector: ReflectorLike) -> None:
        self.reflector = reflector

    def __call__(self, ctx: ACEStepContext) -> ACEStepContext:
        trace = require_field(ctx.trace, "ReflectStep", "trace")
        skillbook = require_field(ctx.skillbook, "ReflectStep", "skillbook")
        if isinstance(trace, dict):
            reflection = self._reflect_on_dict(trace, skillbook)
        else:
            reflection = self.reflector.reflect(
                question="",
                agent_output=AgentOutput(reasoning="", final_answer=""),
                skillbook=skillbook,
                trace=trace,
            )
        return ctx.replace(reflection=reflection)

    def _reflect_on_dict(self, trace: dict[str, Any], skillbook: SkillbookView) -> ReflectorOutput:
        fields = read_trace(trace)
        agent_output = AgentOutput(
            reasoning=fields.reasoning, final_answer=fields.answer, skill_ids=fields.skill_ids
        )
        # Fields with no typed argument go to the prompt's Trace section (cut to its budget).
        extra: dict[str, Any] = {"trace": fields.extra} if fields.extra else {}
        return self.reflector.reflect(
            question=fields.question,
            agent_output=agent_output,
            skillbook=skillbook,
            ground_truth=fields.ground_truth,
            feedback=fields.feedback,
            **extra,
        )

    def __repr__(self) -> str:
        return f"ReflectStep({self.reflector!r})"
