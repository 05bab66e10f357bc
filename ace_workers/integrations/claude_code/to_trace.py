"""ClaudeCodeToTrace: a Claude Code run (or a recorded session) as the Reflector's trace dict."""

from __future__ import annotations

from typing import Any

from ...core.context import ACEStepContext
from ...steps._checks import require_field
from ..trace_text import DEFAULT_MAX_STEP_CHARS, DEFAULT_MAX_TRACE_CHARS
from .events import claude_events_to_trace, record_claude_events
from .result import ClaudeCodeResult

__all__ = ["ClaudeCodeToTrace", "claude_result_to_trace"]


class ClaudeCodeToTrace:
    """Rewrite ``trace`` as the standard trace dict the learning tail reads.

    Takes a :class:`ClaudeCodeResult` (from :class:`ClaudeCodeExecuteStep`) or
    a recorded session: the list of a transcript's events (``~/.claude/projects/
    <project>/<session-id>.jsonl``, as :class:`~ace_workers.steps.LoadTracesStep`
    reads it). The trace holds the task as ``question``, every step in order as
    ``reasoning`` (thinking, text, tool calls and results, each tool output cut
    to ``max_step_chars`` with a note), the final ``answer``, the ``errors``
    and a ``feedback`` line on the outcome.

    Raises:
        EmptySessionError: a recorded session holds no message.
    """

    requires = frozenset({"trace"})
    provides = frozenset({"trace"})

    def __init__(
        self, *, max_step_chars: int = DEFAULT_MAX_STEP_CHARS, max_trace_chars: int = DEFAULT_MAX_TRACE_CHARS
    ) -> None:
        self.limits = {"max_step_chars": max_step_chars, "max_trace_chars": max_trace_chars}

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

    def __repr__(self) -> str:
        return "ClaudeCodeToTrace()"


def claude_result_to_trace(result: ClaudeCodeResult, **limits: int) -> dict[str, Any]:
    """The trace dict of one run; a run that printed nothing still gives a trace carrying its error."""
    recorder = record_claude_events(
        result.execution_trace, f"Claude Code run of {result.task[:60]!r}", **limits
    )
    recorder.messages += 1  # the task itself: it is not echoed in the stream
    recorder.question = result.task
    if result.error and not any(result.error in error for error in recorder.errors):
        recorder.error(result.error)
    outcome = "finished the task" if result.success else f"failed: {result.error}"
    return recorder.to_trace(
        answer=result.output,
        feedback=f"Claude Code {outcome}",
        success=result.success,
        cost_usd=result.cost_usd,
        num_turns=result.num_turns,
        skipped_lines=result.skipped_lines or None,
    )
