"""OpenClawToTraceStep: an OpenClaw session (its JSONL events) as the Reflector's trace dict.

OpenClaw keeps each session as a JSONL file of events
(``~/.openclaw/agents/<agent>/sessions/<session-id>.jsonl``)::

    {"type": "session", "version": 3, "id": "...", "timestamp": "...", "cwd": "..."}
    {"type": "model_change", "provider": "anthropic", "modelId": "claude-sonnet-4-5"}
    {"type": "message", "id": "...", "parentId": "...", "message": {"role": "user",
        "content": [{"type": "text", "text": "..."}]}}
    {"type": "message", "message": {"role": "assistant", "content": [{"type": "thinking", "thinking": "..."},
        {"type": "text", "text": "..."}, {"type": "toolCall", "id": "call_1", "name": "exec",
        "arguments": {...}}], "stopReason": "toolUse"}}
    {"type": "message", "message": {"role": "toolResult", "toolCallId": "call_1", "toolName": "exec",
        "content": [{"type": "text", "text": "..."}], "isError": false}}
    {"type": "compaction", "summary": "..."}

Anthropic-style parts (``tool_use``, ``tool_result``) are read too. Events,
roles and parts of other types are skipped and counted in the trace's
``skipped_events``, never fatal.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ...core.context import ACEStepContext
from ...steps._checks import require_field
from ..session_trace import (
    PartHandler,
    SessionRecorder,
    ignore_part,
    record_content,
    record_text_part,
    record_thinking_part,
)
from ..trace_text import DEFAULT_MAX_STEP_CHARS, DEFAULT_MAX_TRACE_CHARS, TraceConverter, part_text

__all__ = ["OpenClawToTraceStep", "openclaw_events_to_trace", "session_feedback"]

# Bookkeeping events with nothing to learn from: not counted as unknown.
IGNORED_EVENT_TYPES = frozenset({"thinking_level_change", "label", "custom"})
# An assistant message that ended like this is an error of the run.
ERROR_STOP_REASONS = frozenset({"error", "aborted"})
# How a session ended, by the stopReason of its last assistant message.
OUTCOMES = {
    "stop": "it ended with the assistant's answer",
    "length": "the assistant's last reply was cut at its output limit",
    "toolUse": "it ended on a tool call, before a final answer",
    "error": "its last assistant turn failed",
    "aborted": "its last assistant turn was aborted",
}


class OpenClawToTraceStep(TraceConverter):
    """Rewrite ``trace`` (the list of a session's events, from LoadTracesStep) as the standard trace dict.

    The first user message is the ``question``; thinking, text, tool calls and
    tool results in order are the ``reasoning`` (each tool output cut to
    ``max_step_chars`` with a note); the last assistant text is the ``answer``;
    failed tool calls and errored turns are the ``errors``; a summary of the
    session is the ``feedback`` (see :func:`session_feedback`).

    Raises:
        EmptySessionError: the session holds no message.
    """

    def __call__(self, ctx: ACEStepContext) -> ACEStepContext:
        events = require_field(ctx.trace, "OpenClawToTraceStep", "trace")
        if not isinstance(events, list):
            raise TypeError(
                "OpenClawToTraceStep needs ctx.trace to be the list of a session's events "
                f"(LoadTracesStep reads them from a file), got {type(events).__name__}"
            )
        source = str(getattr(ctx.sample, "path", ctx.sample) or "OpenClaw session")
        trace = openclaw_events_to_trace(events, source, **self.limits)
        return ctx.replace(trace=trace)


def openclaw_events_to_trace(
    events: Iterable[Any],
    source: str = "OpenClaw session",
    *,
    max_step_chars: int = DEFAULT_MAX_STEP_CHARS,
    max_trace_chars: int = DEFAULT_MAX_TRACE_CHARS,
) -> dict[str, Any]:
    """The trace dict of one session's events.

    Raises:
        EmptySessionError: the session holds no message.
    """
    recorder = SessionRecorder(source, max_step_chars=max_step_chars, max_trace_chars=max_trace_chars)
    for event in events:
        recorder.events += 1
        kind = event.get("type") if isinstance(event, dict) else None
        handler = _EVENT_HANDLERS.get(kind) if isinstance(kind, str) else None
        if handler is not None and isinstance(event, dict):
            handler(recorder, event)
        elif kind not in IGNORED_EVENT_TYPES or not isinstance(kind, str):
            recorder.skip(str(kind) if isinstance(event, dict) else f"a JSON {type(event).__name__}")
    return recorder.to_trace(feedback=session_feedback(recorder))


def session_feedback(recorder: SessionRecorder) -> str:
    """What spec 001 puts in an OpenClaw trace's feedback: a summary of the session.

    Its messages and tool calls, its errors (the last one quoted), how it ended, and the
    session's own summary (a compaction's) when it has one, e.g. ``OpenClaw session: 1
    user message, 2 assistant turns, 1 tool call; 1 error, the last: read failed: ENOENT;
    it ended with the assistant's answer.``
    """
    counts = ", ".join(
        _count(number, noun)
        for number, noun in (
            (recorder.turns["user"], "user message"),
            (recorder.turns["assistant"], "assistant turn"),
            (recorder.tool_calls, "tool call"),
        )
    )
    text = f"OpenClaw session: {counts}"
    if recorder.errors:
        text += f"; {_count(len(recorder.errors), 'error')}, the last: {recorder.errors[-1]}"
    text += f"; {_outcome(recorder)}."
    if recorder.summaries:
        text += f" Summary: {recorder.summaries[-1]}"
    return text


def _outcome(recorder: SessionRecorder) -> str:
    stop = recorder.stop_reason
    if stop is None:  # an older format, or no assistant turn at all
        return "it ended with the assistant's answer" if recorder.assistant_texts else "it has no answer"
    return OUTCOMES.get(stop, f"its last assistant turn ended with {stop}")


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" + ("" if number == 1 else "s")


# -- events ------------------------------------------------------------------------------------


def _session(recorder: SessionRecorder, event: dict[str, Any]) -> None:
    recorder.session_id = _str(event.get("id")) or recorder.session_id


def _model_change(recorder: SessionRecorder, event: dict[str, Any]) -> None:
    recorder.model = _str(event.get("modelId")) or _str(event.get("model")) or recorder.model


def _summary(recorder: SessionRecorder, event: dict[str, Any]) -> None:
    recorder.summary(part_text(event.get("summary")))


def _message(recorder: SessionRecorder, event: dict[str, Any]) -> None:
    # {"type": "message", "message": {...}}; also a flat {"type": "user", "content": ...}.
    message = event.get("message", event)
    if not isinstance(message, dict):
        recorder.skip("message without a body")
        return
    role = message.get("role", event.get("type"))
    handler = _ROLE_HANDLERS.get(role) if isinstance(role, str) else None
    if handler is None:
        recorder.skip(f"message role {role}")
    else:
        recorder.turns[str(role)] += 1
        handler(recorder, message)


def _user(recorder: SessionRecorder, message: dict[str, Any]) -> None:
    record_content(recorder, message.get("content"), "user", _PART_HANDLERS)


def _assistant(recorder: SessionRecorder, message: dict[str, Any]) -> None:
    recorder.model = _str(message.get("model")) or recorder.model
    record_content(recorder, message.get("content"), "assistant", _PART_HANDLERS)
    stop = message.get("stopReason")
    recorder.stop_reason = _str(stop)
    if stop in ERROR_STOP_REASONS:
        detail = _str(message.get("errorMessage")) or ""
        recorder.error(f"the assistant turn ended with {stop}" + (f": {detail}" if detail else ""))


def _tool_result_message(recorder: SessionRecorder, message: dict[str, Any]) -> None:
    recorder.tool_result(
        part_text(message.get("content")),
        is_error=bool(message.get("isError")),
        call_id=_str(message.get("toolCallId")),
        name=_str(message.get("toolName")),
    )


def _tool_call(recorder: SessionRecorder, part: dict[str, Any], role: str) -> None:
    arguments = part.get("arguments", part.get("input"))
    recorder.tool_call(_str(part.get("name")) or "tool", arguments, _str(part.get("id")))


def _tool_result_part(recorder: SessionRecorder, part: dict[str, Any], role: str) -> None:
    call_id = _str(part.get("toolCallId")) or _str(part.get("tool_use_id"))
    is_error = bool(part.get("isError") or part.get("is_error"))
    recorder.tool_result(part_text(part.get("content")), is_error=is_error, call_id=call_id)


_EVENT_HANDLERS: dict[str, Callable[[SessionRecorder, dict[str, Any]], None]] = {
    "session": _session,
    "model_change": _model_change,
    "message": _message,
    "user": _message,
    "assistant": _message,
    "toolResult": _message,
    "compaction": _summary,
    "branch_summary": _summary,
}

_ROLE_HANDLERS: dict[str, Callable[[SessionRecorder, dict[str, Any]], None]] = {
    "user": _user,
    "assistant": _assistant,
    "toolResult": _tool_result_message,
}

_PART_HANDLERS: dict[str, PartHandler] = {
    "text": record_text_part,
    "thinking": record_thinking_part,
    "toolCall": _tool_call,
    "tool_use": _tool_call,
    "toolResult": _tool_result_part,
    "tool_result": _tool_result_part,
    "image": ignore_part,
}


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None
