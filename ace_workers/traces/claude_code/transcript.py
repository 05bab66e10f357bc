"""Reading Claude Code session transcripts from disk into traces.

Claude Code keeps each session as ``~/.claude/projects/<project>/<session-id>.jsonl``:
one JSON object per line (``type`` user, assistant, summary, system, ...,
with ``sessionId``, ``uuid``, ``parentUuid``, ``timestamp`` and ``message``).
One file is one session, hence one trace.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from ...steps.load_traces import read_jsonl_objects
from ..trace_text import DEFAULT_MAX_STEP_CHARS, DEFAULT_MAX_TRACE_CHARS
from .events import claude_events_to_trace

__all__ = ["read_claude_code_transcript"]

logger = logging.getLogger(__name__)


def read_claude_code_transcript(
    path: str | os.PathLike[str],
    *,
    max_step_chars: int = DEFAULT_MAX_STEP_CHARS,
    max_trace_chars: int = DEFAULT_MAX_TRACE_CHARS,
) -> dict[str, Any]:
    """The trace of one transcript file; malformed lines are skipped and logged with their numbers.

    The trace's ``skipped_lines`` counts the malformed lines, ``skipped_events``
    the events of types not understood.

    Raises:
        FileNotFoundError: no such file.
        EmptySessionError: the file holds no message.
    """
    file = Path(path)
    events, bad_lines = read_jsonl_objects(file)
    if bad_lines:
        logger.warning(
            "%s: skipped %d line(s) that are not JSON objects: %s",
            file,
            len(bad_lines),
            ", ".join(f"line {number} ({reason})" for number, reason in bad_lines[:20]),
        )
    trace = claude_events_to_trace(
        events, str(file), max_step_chars=max_step_chars, max_trace_chars=max_trace_chars
    )
    if bad_lines:
        trace["skipped_lines"] = len(bad_lines)
    trace.setdefault("session_id", file.stem)
    return trace
