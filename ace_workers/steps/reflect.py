"""ReflectStep: the Reflector analyses the trace; the learning tail starts here, in the background."""

from __future__ import annotations

from typing import Any

from ..core.context import ACEStepContext, SkillbookView
from ..core.outputs import AgentOutput, ReflectorOutput
from ..protocols import ReflectorLike
from ._checks import require_field

__all__ = ["ReflectStep"]


class ReflectStep:
    """Provide ``reflection`` from ``ctx.trace``; pure, and the pipeline's async boundary.

    A dict trace (from EvaluateStep or a ToTrace converter) is unpacked into
    the Reflector's typed arguments; any other trace object is passed as-is
    through the ``trace`` keyword for the Reflector to make sense of.
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
        # ToTrace converters may leave a key as None; the typed output wants strings.
        agent_output = AgentOutput(
            reasoning=trace.get("reasoning") or "",
            final_answer=trace.get("answer") or "",
            skill_ids=list(trace.get("skill_ids") or []),
        )
        return self.reflector.reflect(
            question=trace.get("question") or "",
            agent_output=agent_output,
            skillbook=skillbook,
            ground_truth=trace.get("ground_truth"),
            feedback=trace.get("feedback"),
        )

    def __repr__(self) -> str:
        return f"ReflectStep({self.reflector!r})"
