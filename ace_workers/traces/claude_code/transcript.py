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

from ...core.jsonl import read_jsonl_objects
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
    events, skipped = read_jsonl_objects(file)
    if skipped:
        logger.warning("%s", skipped.describe())
    trace = claude_events_to_trace(
        events, str(file), max_step_chars=max_step_chars, max_trace_chars=max_trace_chars
    )
    if skipped:
        trace["skipped_lines"] = len(skipped)
    trace.setdefault("session_id", file.stem)
    return trace
