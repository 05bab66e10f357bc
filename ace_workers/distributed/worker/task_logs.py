"""Celery's own lines about a step task: tagged with the step, and never carrying the sample.

run_step tags the lines of the step itself (``step_log_context``), but Celery logs
about the task outside it: "received" on the consumer's thread before the task
runs, "succeeded", "retry" and "raised" on the pool's thread after the step
returned or raised, and our retry and dead-letter lines come between. So:

- Celery's ``task_prerun`` and ``task_postrun`` signals (hooked up in celery_worker.py)
  hold the step context, entered and left by the functions here, for
  the whole task on the thread that runs it. Both are sent on that thread, around
  the task and around Celery's own lines about its outcome (postrun comes last, from
  a ``finally``), so every line logged there in between carries the fields, from any
  logger. Signals rather than a filter that looks up Celery's current task: the
  context variable is the one channel the handlers already read (StepContextFilter).
- The "received" line comes before any signal, on another thread. Celery gives it the
  task's name and its kwargs' repr as ``record.data`` ("for custom log handlers"), and
  a filter on its logger reads the fields from them.
- Celery's "succeeded" line ends with the task's return value: for a step, the next
  payload, the trace's question and answer among it. The same filter cuts it off. A step
  message's ``argsrepr`` is ``(<payload>,)`` (celery_dispatch.PAYLOAD_ARGSREPR), so no line
  shows the payload through it.

A step's kwargs are ids (recipe, skillbook, index, batch, epoch, sample), never content.
"""

from __future__ import annotations

import ast
import logging
from collections.abc import Mapping
from contextvars import Token
from dataclasses import asdict
from typing import Any

from ...observability.logs import (
    StepLogContext,
    enter_step_log_context,
    leave_step_log_context,
)
from ..store.batches import sample_key
from .chains import STEP_TASK

__all__ = [
    "STEP_TASK_LOGGERS",
    "CeleryTaskLineFilter",
    "StepFailureTracebackFilter",
    "enter_task_lines",
    "filter_task_lines",
    "leave_task_lines",
    "task_log_context",
]

# Celery's loggers of task lines: "received" (strategy), "succeeded", "retry", "raised" (trace).
STEP_TASK_LOGGERS = ("celery.worker.strategy", "celery.app.trace")
# Celery's success line without the return value; the runtime to the millisecond.
SUCCEEDED = "Task %(name)s[%(id)s] succeeded in %(runtime).3fs"
# What Celery's task-line data holds of a sample's content: the task's args and its return value.
_CONTENT_KEYS = ("args", "return_value")
# A step's kwargs repr is ~150 characters; anything far longer is no message of ours.
_MAX_KWARGS_REPR = 2000


def task_log_context(task_name: str, kwargs: Mapping[str, Any]) -> StepLogContext | None:
    """The step a step task's kwargs name; None for another task or kwargs that are not ours.

    ``task_name`` is the name Celery shows: sample chains name each task after its step
    (``ace.ReflectStep``); a message without that name is named by its step index.
    """
    batch_id, skillbook = kwargs.get("batch_id"), kwargs.get("skillbook")
    epoch, index = kwargs.get("epoch"), kwargs.get("sample_index")
    if not (isinstance(batch_id, str) and isinstance(skillbook, str)):
        return None
    if not (type(epoch) is int and type(index) is int):
        return None
    step = task_name.removeprefix("ace.") if task_name != STEP_TASK else f"step {kwargs.get('index')!r}"
    return StepLogContext(batch_id, sample_key(epoch, index), skillbook, step)


def filter_task_lines() -> None:
    """Put :class:`CeleryTaskLineFilter` on Celery's task-line loggers, once per process."""
    for name in STEP_TASK_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, CeleryTaskLineFilter) for f in logger.filters):
            logger.addFilter(CeleryTaskLineFilter())


def enter_task_lines(
    task_name: str, shown_name: str | None, kwargs: object
) -> Token[StepLogContext | None] | None:
    """Before a task runs, on its thread: the step's log context for a step task, else None.

    ``shown_name`` is the name Celery shows for the task (a chain's step name), if any. The
    token returned is for :func:`leave_task_lines` once the task and Celery's lines about it are done.
    """
    if task_name != STEP_TASK or not isinstance(kwargs, Mapping):
        return None
    context = task_log_context(shown_name or task_name, kwargs)
    return enter_step_log_context(context) if context is not None else None


def leave_task_lines(token: Token[StepLogContext | None]) -> None:
    """After a task: back to the log context before it."""
    leave_step_log_context(token)


class CeleryTaskLineFilter(logging.Filter):
    """On Celery's task-line loggers: the step fields of a "received" line, no return value on "succeeded"."""

    def filter(self, record: logging.LogRecord) -> bool:
        data = getattr(record, "data", None)
        if not isinstance(data, Mapping):
            return True
        if "return_value" in data and "runtime" in data:
            record.msg = SUCCEEDED
        # Nor does the record keep the payload (its repr in "args") for a handler that shows extras.
        kept = {key: value for key, value in data.items() if key not in _CONTENT_KEYS}
        if record.args is data:
            record.args = kept
        record.data = kept
        if getattr(record, "batch_id", None) is None:
            context = task_log_context(str(data.get("name", "")), _kwargs_of(data.get("kwargs")))
            if context is not None:
                for name, value in asdict(context).items():
                    setattr(record, name, value)
        return True


class StepFailureTracebackFilter(logging.Filter):
    """Cuts the traceback, some 30 to 240 lines, off Celery's "raised unexpected" line of a step task.

    The line itself stays, one line naming the exception; the step's own "failed for good"
    line says the rest (its traceback once per batch and error kind at DEBUG, failure_logs.py),
    and the batch keeps the traceback's last frames. Used by every worker, in-process or not,
    unless ACE_LOG_TRACEBACKS asks for Celery's traceback on every failure.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        data = getattr(record, "data", None)
        if record.levelno < logging.ERROR or not isinstance(data, Mapping) or "exc" not in data:
            return True
        if task_log_context(str(data.get("name", "")), _kwargs_of(data.get("kwargs"))) is not None:
            record.exc_info, record.exc_text = None, None
        return True


def _kwargs_of(shown: object) -> Mapping[str, Any]:
    """The kwargs of a task line: Celery gives the repr Celery made of them (a literal), or a dict."""
    if isinstance(shown, Mapping):
        return shown
    if not isinstance(shown, str) or len(shown) > _MAX_KWARGS_REPR:
        return {}
    try:
        parsed = ast.literal_eval(shown)  # literals only: never runs what a message says
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return {}
    return parsed if isinstance(parsed, dict) else {}
