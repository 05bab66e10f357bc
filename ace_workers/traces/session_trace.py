"""Building the Reflector's trace dict from an agent session, one event at a time.

The Claude Code and OpenClaw converters read different event formats but
record the same things: the user's task, the assistant's thinking, text and
tool calls and the tool results in order, the final answer and any errors.
:class:`SessionRecorder` collects them and renders the standard trace dict: the six
keys of spec 001 (``question``, ``reasoning``, ``answer``, ``skill_ids``, ``feedback``,
``ground_truth``), always, and the extra fields ``errors``, ``tool_calls``,
``session_id``, ``skipped_events`` and the like when they hold something.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

from ..core.skill_ids import extract_cited_skill_ids
from ..counts import counted
from ..errors import EmptySessionError
from .trace_text import DEFAULT_MAX_STEP_CHARS, DEFAULT_MAX_TRACE_CHARS, cut_text, part_text

__all__ = [
    "SessionRecorder",
    "PartHandler",
    "record_content",
    "record_text_part",
    "record_thinking_part",
    "ignore_part",
]

# How much of an error message goes into the trace's ``errors`` list.
MAX_ERROR_CHARS = 500


class SessionRecorder:
    """Collects the steps of one agent session and renders them as a trace dict.

    Every step's text (a tool output above all) is cut to ``max_step_chars``
    and the whole reasoning to ``max_trace_chars``, each cut saying so, so a
    session with a huge tool output still makes a trace well below the
    producer's ``ACE_MAX_TRACE_BYTES``.
    """

    def __init__(
        self,
        source: str,
        *,
        max_step_chars: int = DEFAULT_MAX_STEP_CHARS,
        max_trace_chars: int = DEFAULT_MAX_TRACE_CHARS,
    ) -> None:
        if max_step_chars < 100 or max_trace_chars < 100:
            raise ValueError(
                f"max_step_chars and max_trace_chars must be at least 100, got {max_step_chars}, "
                f"{max_trace_chars}"
            )
        self.source = source
        self.max_step_chars = max_step_chars
        self.max_trace_chars = max_trace_chars
        self.question = ""
        self.steps: list[str] = []
        self.assistant_texts: list[str] = []
        self.errors: list[str] = []
        self.skipped: Counter[str] = Counter()
        self.summaries: list[str] = []
        self.session_id: str | None = None
        self.model: str | None = None
        self.events = 0
        self.messages = 0
        self.tool_calls = 0
        # Whole messages by role, for formats whose events are messages (OpenClaw's).
        self.turns: Counter[str] = Counter()
        # How the last assistant turn ended, where the format records it ("stop", "toolUse", ...).
        self.stop_reason: str | None = None
        self._tool_names: dict[str, str] = {}

    # -- what a session holds ---------------------------------------------------------------
    def user_text(self, text: str) -> None:
        """A user message: the first is the task, later ones are steps."""
        if not text.strip():
            return
        self.messages += 1
        if not self.question:
            self.question = cut_text(text, self.max_trace_chars // 4)
        else:
            self._step("user", text)

    def assistant_text(self, text: str) -> None:
        """Text the assistant said; the last one is the answer unless the run reports its own."""
        if not text.strip():
            return
        self.messages += 1
        self.assistant_texts.append(text)
        self._step("assistant", text)

    def thinking(self, text: str) -> None:
        """The assistant's visible thinking."""
        if text.strip():
            self.messages += 1
            self._step("thinking", text)

    def tool_call(self, name: str, arguments: Any, call_id: str | None = None) -> None:
        """A tool the assistant called, with its arguments."""
        self.messages += 1
        self.tool_calls += 1
        if call_id:
            self._tool_names[call_id] = name
        self._step(f"tool call {name}", _json(arguments))

    def tool_result(
        self, text: str, *, is_error: bool = False, call_id: str | None = None, name: str | None = None
    ) -> None:
        """What a tool returned (named by ``name``, else by its call); an error is also in ``errors``."""
        self.messages += 1
        name = name or self._tool_names.get(call_id or "", "tool")
        label = f"{name} result" + (" (error)" if is_error else "")
        self._step(label, text)
        if is_error:
            self.error(f"{name} failed: {text.strip()}")

    def error(self, text: str) -> None:
        """Something that went wrong in the run."""
        self.errors.append(cut_text(text, MAX_ERROR_CHARS))

    def run_error(self, text: str | None) -> None:
        """The error the run as a whole reported, unless a step already recorded it (a tool's, say)."""
        if text and not any(text in recorded for recorded in self.errors):
            self.error(text)

    def summary(self, text: str) -> None:
        """A summary of the session (a compaction or a title)."""
        if text.strip():
            self.summaries.append(text.strip())

    def skip(self, kind: str) -> None:
        """An event or content part of a kind not understood: counted, never fatal."""
        self.skipped[kind] += 1

    # -- the trace ------------------------------------------------------------------------------
    def to_trace(
        self,
        *,
        answer: str | None = None,
        feedback: str | None = None,
        skill_ids: list[str] | None = None,
        **extra: Any,
    ) -> dict[str, Any]:
        """The trace dict: the six standard keys always, the other fields when they hold something.

        ``answer`` defaults to the last assistant text, ``feedback`` to the session's
        summary or its errors, ``skill_ids`` to the skill ids the assistant cited. No
        session records the expected answer, so ``ground_truth`` is None.

        Raises:
            EmptySessionError: the session held no message at all.
        """
        if self.messages == 0 and not self.errors:
            raise EmptySessionError(self.source, self.events, sum(self.skipped.values()))
        final = answer if answer is not None else (self.assistant_texts[-1] if self.assistant_texts else "")
        if skill_ids is None:
            skill_ids = extract_cited_skill_ids("\n".join([*self.assistant_texts, final]))
        # Spec 001's six keys, which ReflectStep reads: present even when empty ("", [] or None).
        standard: dict[str, Any] = {
            "question": self.question,
            "reasoning": cut_text("\n".join(self.steps), self.max_trace_chars),
            "answer": cut_text(final, self.max_step_chars * 4),
            "skill_ids": list(skill_ids),
            "feedback": feedback if feedback is not None else self._default_feedback(),
            "ground_truth": None,
        }
        details: dict[str, Any] = {
            "errors": self.errors,
            "tool_calls": self.tool_calls,
            "session_id": self.session_id,
            "model": self.model,
            "skipped_events": dict(sorted(self.skipped.items())),
            **extra,
        }
        return standard | {key: value for key, value in details.items() if value not in (None, "", [], {})}

    def _default_feedback(self) -> str | None:
        # The session's own summary says what it was about; the errors are in ``errors`` either way.
        if self.summaries:
            return self.summaries[-1]
        if self.errors:
            return f"The session ran into {counted(len(self.errors), 'error')}; the last: {self.errors[-1]}"
        return None

    def _step(self, label: str, text: str) -> None:
        self.steps.append(f"[{len(self.steps) + 1}] {label}: {cut_text(text.strip(), self.max_step_chars)}")


def _json(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return repr(value)


# What records one content part of a message: (recorder, part, role of the message).
PartHandler = Callable[[SessionRecorder, dict[str, Any], str], None]


def record_content(
    recorder: SessionRecorder, content: Any, role: str, handlers: Mapping[str, PartHandler]
) -> None:
    """A message's content: a string is the role's text; a list is parts, each recorded by its type.

    A part of a type ``handlers`` does not know, and content of any other shape, is counted
    as skipped, never an error.
    """
    if isinstance(content, str):
        (recorder.assistant_text if role == "assistant" else recorder.user_text)(content)
        return
    if not isinstance(content, list):
        recorder.skip(f"{role} content of type {type(content).__name__}")
        return
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        handler = handlers.get(kind) if isinstance(kind, str) else None
        if handler is None or not isinstance(part, dict):
            recorder.skip(f"{role} part {kind}")
        else:
            handler(recorder, part, role)


def record_text_part(recorder: SessionRecorder, part: dict[str, Any], role: str) -> None:
    """A text part: the user's task or the assistant's words."""
    text = part_text(part.get("text"))
    (recorder.assistant_text if role == "assistant" else recorder.user_text)(text)


def record_thinking_part(recorder: SessionRecorder, part: dict[str, Any], role: str) -> None:
    """A thinking part: a step of the assistant's reasoning."""
    recorder.thinking(part_text(part.get("thinking")))


def ignore_part(recorder: SessionRecorder, part: dict[str, Any], role: str) -> None:
    """Parts with nothing to learn from as text (images, redacted thinking)."""
