"""Keeping the text of a converted trace bounded: long tool outputs are cut with a note saying so."""

from __future__ import annotations

import json
from typing import Any, TypedDict

__all__ = [
    "DEFAULT_MAX_STEP_CHARS",
    "DEFAULT_MAX_TRACE_CHARS",
    "TraceConverter",
    "TraceLimits",
    "cut_text",
    "part_text",
]

# One tool output rarely teaches more than its first and last kilobyte or so.
DEFAULT_MAX_STEP_CHARS = 4_000
# The whole reasoning text of a trace: far below the producer's ACE_MAX_TRACE_BYTES default (16 MiB)
# and within what a Reflector prompt can take.
DEFAULT_MAX_TRACE_CHARS = 200_000


def cut_text(text: str, limit: int) -> str:
    """``text`` if it has at most ``limit`` characters, else its head and tail with a note of what was cut."""
    if len(text) <= limit:
        return text
    keep = max(limit - 60, 2)
    head, tail = keep * 2 // 3, keep - keep * 2 // 3
    cut = len(text) - head - tail
    return f"{text[:head]}\n[... {cut:,} characters cut from this output ...]\n{text[len(text) - tail :]}"


def part_text(value: Any) -> str:
    """The text of a message content value: a string, a list of parts (text kept, others named), or JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(text for text in (_one_part(item) for item in value) if text)
    return _as_json(value)


def _one_part(item: Any) -> str:
    if isinstance(item, dict):
        kind = item.get("type", "text")
        return part_text(item.get("text")) if kind == "text" else f"[{kind} part]"
    return item if isinstance(item, str) else _as_json(item)


def _as_json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):  # e.g. a circular structure
        return repr(value)


class TraceLimits(TypedDict):
    """How long one step's text and the whole reasoning of a converted trace may be."""

    max_step_chars: int
    max_trace_chars: int


class TraceConverter:
    """What every ToTrace step shares: it rewrites ``trace``, its text cut to the same two limits.

    Subclasses define ``__call__``; ``self.limits`` goes to their conversion
    function as ``max_step_chars`` and ``max_trace_chars``.
    """

    requires = frozenset({"trace"})
    provides = frozenset({"trace"})

    def __init__(
        self, *, max_step_chars: int = DEFAULT_MAX_STEP_CHARS, max_trace_chars: int = DEFAULT_MAX_TRACE_CHARS
    ) -> None:
        self.limits = TraceLimits(max_step_chars=max_step_chars, max_trace_chars=max_trace_chars)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
