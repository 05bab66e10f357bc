"""Reading Claude Code's events: the CLI's ``stream-json`` output and the session transcripts on disk.

Both are one JSON object per line in the same shape (the Anthropic Messages
format inside a ``message`` field)::

    {"type": "system", "subtype": "init", "session_id": ..., "model": ...}     (stream-json)
    {"type": "user", "message": {"role": "user", "content": "fix the bug"}, "sessionId": ...}
    {"type": "assistant", "message": {"content": [{"type": "thinking", "thinking": ...},
        {"type": "text", "text": ...}, {"type": "tool_use", "id": ..., "name": "Bash", "input": {...}}]}}
    {"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": ..., "content": ...,
        "is_error": false}]}}
    {"type": "result", "subtype": "success", "is_error": false, "result": "...", "total_cost_usd": ...,
        "usage": {...}, "session_id": ..., "num_turns": ..., "duration_ms": ...}          (stream-json)
    {"type": "summary", "summary": "...", "leafUuid": ...}                             (transcripts)

Events and content parts of other types are skipped and counted, never fatal:
the formats grow new types between releases.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ..session_trace import (
    PartHandler,
    SessionRecorder,
    ignore_part,
    record_content,
    record_text_part,
    record_thinking_part,
)
from ..trace_text import DEFAULT_MAX_STEP_CHARS, DEFAULT_MAX_TRACE_CHARS, part_text

__all__ = ["record_claude_events", "claude_events_to_trace", "result_event"]

# Event types read for nothing (bookkeeping), so not counted as unknown.
IGNORED_EVENT_TYPES = frozenset({"file-history-snapshot", "queue-operation"})


def record_claude_events(
    events: Iterable[Any],
    source: str,
    *,
    max_step_chars: int = DEFAULT_MAX_STEP_CHARS,
    max_trace_chars: int = DEFAULT_MAX_TRACE_CHARS,
) -> SessionRecorder:
    """A recorder holding every step of ``events`` in order (the ``result`` event's fields too)."""
    recorder = SessionRecorder(source, max_step_chars=max_step_chars, max_trace_chars=max_trace_chars)
    for event in events:
        recorder.events += 1
        if not isinstance(event, dict):
            recorder.skip(f"a JSON {type(event).__name__}")
            continue
        kind = event.get("type")
        recorder.session_id = recorder.session_id or _str(event.get("session_id") or event.get("sessionId"))
        handler = _EVENT_HANDLERS.get(kind) if isinstance(kind, str) else None
        if handler is not None:
            handler(recorder, event)
        elif kind not in IGNORED_EVENT_TYPES:
            recorder.skip(str(kind))
    return recorder


def result_event(events: Iterable[Any]) -> dict[str, Any] | None:
    """The last ``result`` event of a stream-json run, or None (the run died before printing one)."""
    found = None
    for event in events:
        if isinstance(event, dict) and event.get("type") == "result":
            found = event
    return found


def claude_events_to_trace(
    events: list[Any], source: str = "Claude Code session", **limits: int
) -> dict[str, Any]:
    """The trace dict of a recorded Claude Code session (a transcript's lines, or a stream-json run).

    Raises:
        EmptySessionError: the session holds no message.
    """
    recorder = record_claude_events(events, source, **limits)
    result = result_event(events)
    if result is None:
        return recorder.to_trace()
    answer = _str(result.get("result"))
    return recorder.to_trace(answer=answer, cost_usd=result.get("total_cost_usd"))


# -- events ------------------------------------------------------------------------------------


def _system(recorder: SessionRecorder, event: dict[str, Any]) -> None:
    if event.get("subtype") == "init":
        recorder.model = _str(event.get("model")) or recorder.model


def _message(recorder: SessionRecorder, event: dict[str, Any]) -> None:
    if event.get("isMeta"):  # the CLI's own notes to the model (caveats, command output)
        return
    message = event.get("message")
    if not isinstance(message, dict):
        recorder.skip(f"{event.get('type')} without message")
        return
    role = "assistant" if event.get("type") == "assistant" else "user"
    if role == "assistant" and isinstance(message.get("model"), str):
        recorder.model = message["model"]
    record_content(recorder, message.get("content"), role, _PART_HANDLERS)


def _result(recorder: SessionRecorder, event: dict[str, Any]) -> None:
    subtype = _str(event.get("subtype")) or "unknown"
    if event.get("is_error") or subtype.startswith("error"):
        detail = _str(event.get("result")) or ", ".join(str(e) for e in event.get("errors") or [])
        recorder.error(f"the run ended with {subtype}" + (f": {detail}" if detail else ""))


def _summary(recorder: SessionRecorder, event: dict[str, Any]) -> None:
    recorder.summary(_str(event.get("summary")) or "")


_EVENT_HANDLERS: dict[str, Callable[[SessionRecorder, dict[str, Any]], None]] = {
    "system": _system,
    "user": _message,
    "assistant": _message,
    "result": _result,
    "summary": _summary,
}

# -- content parts -----------------------------------------------------------------------------


def _tool_use(recorder: SessionRecorder, part: dict[str, Any], role: str) -> None:
    recorder.tool_call(_str(part.get("name")) or "tool", part.get("input"), _str(part.get("id")))


def _tool_result(recorder: SessionRecorder, part: dict[str, Any], role: str) -> None:
    recorder.tool_result(
        part_text(part.get("content")),
        is_error=bool(part.get("is_error")),
        call_id=_str(part.get("tool_use_id")),
    )


_PART_HANDLERS: dict[str, PartHandler] = {
    "text": record_text_part,
    "thinking": record_thinking_part,
    "redacted_thinking": ignore_part,
    "image": ignore_part,
    "tool_use": _tool_use,
    "server_tool_use": _tool_use,
    "tool_result": _tool_result,
}


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None
