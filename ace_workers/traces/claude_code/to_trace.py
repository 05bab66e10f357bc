"""ClaudeCodeToTrace: a Claude Code run (or a recorded session) as the Reflector's trace dict."""

from __future__ import annotations

from typing import Any

from ...core.context import ACEStepContext
from ...steps._checks import require_field
from ..trace_text import TraceConverter
from .events import claude_events_to_trace, record_claude_events
from .result import ClaudeCodeResult

__all__ = ["ClaudeCodeToTrace", "claude_result_to_trace"]


class ClaudeCodeToTrace(TraceConverter):
    """Rewrite ``trace`` as the standard trace dict the learning tail reads.

    Takes a :class:`ClaudeCodeResult` (from
    :class:`~ace_workers.integrations.claude_code.ClaudeCodeExecuteStep`) or
    a recorded session: the list of a transcript's events (``~/.claude/projects/
    <project>/<session-id>.jsonl``, as :class:`~ace_workers.steps.LoadTracesStep`
    reads it). The trace holds the task as ``question``, every step in order as
    ``reasoning`` (thinking, text, tool calls and results, each tool output cut
    to ``max_step_chars`` with a note), the final ``answer``, the ``errors``
    and a ``feedback`` line on the outcome.

    Raises:
        EmptySessionError: a recorded session holds no message.
    """

    def __call__(self, ctx: ACEStepContext) -> ACEStepContext:
        trace = require_field(ctx.trace, "ClaudeCodeToTrace", "trace")
        if isinstance(trace, ClaudeCodeResult):
            return ctx.replace(trace=claude_result_to_trace(trace, **self.limits))
        if isinstance(trace, list):
            return ctx.replace(trace=claude_events_to_trace(trace, "Claude Code session", **self.limits))
        raise TypeError(
            "ClaudeCodeToTrace needs ctx.trace to be a ClaudeCodeResult or a list of transcript events, "
            f"got {type(trace).__name__}"
        )


def claude_result_to_trace(result: ClaudeCodeResult, **limits: int) -> dict[str, Any]:
    """The trace dict of one run; a run that printed nothing still gives a trace carrying its error."""
    recorder = record_claude_events(
        result.execution_trace, f"Claude Code run of {result.task[:60]!r}", **limits
    )
    recorder.messages += 1  # the task itself: it is not echoed in the stream
    recorder.question = result.task
    recorder.run_error(result.error)
    outcome = "finished the task" if result.success else f"failed: {result.error}"
    return recorder.to_trace(
        answer=result.output,
        feedback=f"Claude Code {outcome}",
        success=result.success,
        cost_usd=result.cost_usd,
        num_turns=result.num_turns,
        skipped_lines=result.skipped_lines or None,
    )
