"""ClaudeCodeResult: what one Claude Code run did, as the execute step records it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["ClaudeCodeResult"]


@dataclass
class ClaudeCodeResult:
    """One run of Claude Code on a task.

    ``execution_trace`` holds the run's stream-json events in order (system,
    assistant, user tool results, result); :class:`ClaudeCodeToTrace` turns
    them into the Reflector's trace. ``success`` is False when the CLI exited
    non-zero, was killed at its timeout, printed no result, or reported an error;
    ``error`` then says which.
    """

    task: str
    success: bool
    output: str
    execution_trace: list[dict[str, Any]] = field(default_factory=list)
    returncode: int | None = 0
    error: str | None = None
    session_id: str | None = None
    cost_usd: float | None = None
    usage: dict[str, Any] = field(default_factory=dict)
    num_turns: int | None = None
    duration_seconds: float = 0.0
    skipped_lines: int = 0
