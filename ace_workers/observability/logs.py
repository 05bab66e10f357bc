"""Structured logs: which batch, sample, skillbook and step a log line comes from.

While a worker runs a step, :func:`step_log_context` holds the step's identity
in a context variable (the worker's Celery signals hold it for a whole task:
``distributed/worker/task_logs.py``). :class:`StepContextFilter`, installed on
a handler, copies it onto every record that handler emits, whichever logger
logged it (a role, the store, Celery), so :class:`JsonFormatter` writes it as
fields and :class:`TextFormatter` appends it. A context variable, not a
thread-local: it follows the step into the event loop of an async step.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar, Token
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TextIO

__all__ = [
    "LOG_FORMATS",
    "JsonFormatter",
    "StepContextFilter",
    "StepLogContext",
    "TextFormatter",
    "configure_logging",
    "enter_step_log_context",
    "leave_step_log_context",
    "step_log_context",
]

LOG_FORMATS = ("text", "json")
# The record attributes StepContextFilter sets (None outside a step).
CONTEXT_FIELDS = ("batch_id", "sample", "skillbook", "step")
_TEXT_FORMAT = "[%(asctime)s: %(levelname)s/%(processName)s] %(name)s: %(message)s"

_current: ContextVar[StepLogContext | None] = ContextVar("ace_step_log_context", default=None)


@dataclass(frozen=True)
class StepLogContext:
    """The step a worker is running: its batch, sample (``"epoch:index"``), skillbook and step name."""

    batch_id: str
    sample: str
    skillbook: str
    step: str


@contextmanager
def step_log_context(context: StepLogContext) -> Iterator[StepLogContext]:
    """Tag every record logged inside the block with ``context`` (via StepContextFilter)."""
    token = enter_step_log_context(context)
    try:
        yield context
    finally:
        leave_step_log_context(token)


def enter_step_log_context(context: StepLogContext) -> Token[StepLogContext | None]:
    """Tag every record logged from now on in this context with ``context``, until the token is left.

    For a begin and an end that are two calls (Celery's task_prerun and task_postrun signals).
    """
    return _current.set(context)


def leave_step_log_context(token: Token[StepLogContext | None]) -> None:
    """Put back the step context that was current before ``token``'s enter."""
    _current.reset(token)


class StepContextFilter(logging.Filter):
    """Copies the running step's identity onto each record (batch_id, sample, skillbook, step)."""

    def filter(self, record: logging.LogRecord) -> bool:
        context = _current.get()
        for name in CONTEXT_FIELDS:
            # A record logged inside a step and handled later (e.g. queued) keeps the step it came from.
            if getattr(record, name, None) is None:
                setattr(record, name, getattr(context, name) if context is not None else None)
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, the step fields, and any exception."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name in CONTEXT_FIELDS:
            value = getattr(record, name, None)
            if value is not None:
                entry[name] = value
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        # default=str: an argument that is not JSON must never cost the log line. No spaces
        # after the separators: a typical line stays under 300 characters.
        return json.dumps(entry, ensure_ascii=False, default=str, separators=(",", ":"))


class TextFormatter(logging.Formatter):
    """The human form: time, level, process, logger and message, then the step fields in brackets.

    ``... ApplyStep: ... [batch_id=9f2c... sample=e1:3 skillbook=support step=ApplyStep]``; a
    line logged outside a step has no brackets. The exception, if any, follows on the next lines.
    """

    def __init__(self) -> None:
        super().__init__(_TEXT_FORMAT)

    def formatMessage(self, record: logging.LogRecord) -> str:
        line = super().formatMessage(record)
        fields = [f"{name}={value}" for name in CONTEXT_FIELDS if (value := getattr(record, name, None))]
        return f"{line} [{' '.join(fields)}]" if fields else line


def configure_logging(log_format: str, level: int | str = logging.INFO, stream: TextIO | None = None) -> None:
    """Replace the root logger's handlers with one writing ``log_format`` ("text" or "json") to ``stream``.

    Both formats carry the step fields: "text" is the human form (the fields
    appended in brackets), "json" one object per line for log shippers (the
    fields as keys). Default stream: stderr.
    Python warnings are logged too (``logging.captureWarnings``).
    """
    if log_format not in LOG_FORMATS:
        raise ValueError(f"unknown log format {log_format!r}: use {' or '.join(LOG_FORMATS)}")
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.addFilter(StepContextFilter())
    handler.setFormatter(JsonFormatter() if log_format == "json" else TextFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper() if isinstance(level, str) else level)
    # Warnings (e.g. Celery's at worker start) become records too, instead of raw lines on stderr.
    logging.captureWarnings(True)
