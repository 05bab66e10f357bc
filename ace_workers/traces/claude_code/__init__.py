"""Claude Code runs and session transcripts as traces (its stream-json events, one JSON object a line)."""

from .events import claude_events_to_trace
from .result import ClaudeCodeResult
from .to_trace import ClaudeCodeToTrace
from .transcript import read_claude_code_transcript

__all__ = ["ClaudeCodeResult", "ClaudeCodeToTrace", "claude_events_to_trace", "read_claude_code_transcript"]
