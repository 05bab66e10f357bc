"""RROpikStep: the Recursive Reflector's REPL session as one Opik trace with a span per iteration."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from ..core.context import ACESample, ACEStepContext
from ..core.outputs import ReflectorOutput
from ..observability.opik import OpikLogging

if TYPE_CHECKING:
    from opik import Opik

__all__ = ["RROpikStep"]

logger = logging.getLogger(__name__)

TRACE_NAME = "rr_reflect"
SPAN_NAME = "rr_iteration_{}"
# rr_trace keys that hold the iterations; every other key goes onto the trace's metadata.
_ITERATIONS_KEY = "iterations"


class RROpikStep(OpikLogging):
    """Log the RR reflection of each sample as an Opik trace: one ``rr_iteration_N`` span per iteration.

    Reads ``ctx.reflection.raw["rr_trace"]``, which RRStep fills after its
    loop; without it (an ordinary Reflector ran) the step does nothing, so it
    can follow any reflect step. Each span carries the code sent to the
    sandbox as input, its stdout, stderr and error as output, and
    ``final_called``, ``killed`` and ``duration_s`` as metadata; the rest of
    ``rr_trace`` (iterations used, the limit, whether FINAL was called) goes on
    the trace. Soft import, ``OPIK_DISABLED`` and ``strict`` as for
    :class:`~ace_workers.steps.OpikStep`.
    """

    requires = frozenset({"reflection"})
    provides: frozenset[str] = frozenset()

    default_project = "ace-rr"

    def __call__(self, ctx: ACEStepContext) -> ACEStepContext:
        reflection = ctx.reflection
        rr_trace = reflection.raw.get("rr_trace") if reflection is not None else None
        if self._client is None or reflection is None or not isinstance(rr_trace, Mapping):
            return ctx
        try:
            self._log(self._client, ctx, reflection, rr_trace)
        except Exception:  # tracing must never cost a sample its learning
            logger.warning("RROpikStep could not log sample %d", ctx.global_sample_index, exc_info=True)
        return ctx

    def _log(
        self, client: Opik, ctx: ACEStepContext, reflection: ReflectorOutput, rr_trace: Mapping[str, Any]
    ) -> None:
        iterations = [it for it in rr_trace.get(_ITERATIONS_KEY) or [] if isinstance(it, Mapping)]
        # rr_trace has durations, not timestamps: lay the iterations end to end, ending now.
        end = datetime.now(UTC)
        start = end - timedelta(seconds=sum(_duration(it) for it in iterations))
        trace = client.trace(
            name=TRACE_NAME,
            project_name=self.project_name,
            start_time=start,
            end_time=end,
            input=_question(ctx),
            output={"key_insight": reflection.key_insight, "reasoning": reflection.reasoning},
            metadata={
                **{key: value for key, value in rr_trace.items() if key != _ITERATIONS_KEY},
                "global_sample_index": ctx.global_sample_index,
                "epoch": ctx.epoch,
            },
            tags=self.tags or None,
        )
        span_start = start
        for position, iteration in enumerate(iterations, start=1):
            span_end = span_start + timedelta(seconds=_duration(iteration))
            trace.span(
                name=SPAN_NAME.format(iteration.get("iteration", position)),
                start_time=span_start,
                end_time=span_end,
                input={"code": iteration.get("code", "")},
                output={
                    "stdout": iteration.get("stdout", ""),
                    "stderr": iteration.get("stderr", ""),
                    "error": iteration.get("error"),
                },
                metadata={
                    "final_called": iteration.get("final_called", False),
                    "killed": iteration.get("killed"),
                    "duration_s": iteration.get("duration_s"),
                },
            )
            span_start = span_end


def _duration(iteration: Mapping[str, Any]) -> float:
    """An iteration's duration in seconds; 0 when missing or not a number."""
    value = iteration.get("duration_s")
    return float(value) if isinstance(value, int | float) and value > 0 else 0.0


def _question(ctx: ACEStepContext) -> dict[str, Any]:
    """The task the reflection was about, from a dict trace or the sample."""
    if isinstance(ctx.trace, dict) and "question" in ctx.trace:
        return {"question": ctx.trace["question"]}
    if isinstance(ctx.sample, ACESample):
        return {"question": ctx.sample.question}
    return {}
