"""A failed step in a worker's log: one line, and its traceback once per batch and error kind.

A provider that is down fails every sample the same way. Logged with its traceback each time,
4 samples made some 1,300 lines (24 tracebacks of about 240 lines); one line per failure says as
much. The line (tasks.py) names the step and the error class with its message and cause, and the
step fields (batch_id, sample, skillbook) come with it (task_logs.py). The traceback is logged at
DEBUG the first time a batch meets an error class; ACE_LOG_TRACEBACKS=1 keeps Celery's traceback
on every failure instead (celery_worker.py then leaves its ``raised`` line whole).
"""

from __future__ import annotations

import threading

__all__ = ["FirstFailures", "failure_line"]

# Batches and error classes remembered; forgotten past this many (a worker runs for weeks), after
# which a traceback may be logged once more.
_MAX_REMEMBERED = 1000


def failure_line(exc: BaseException) -> str:
    """``Class: message``, and ``(cause: Class: message)`` when the cause adds something; one line."""
    said = f"{type(exc).__name__}: {exc}"
    cause = exc.__cause__
    if cause is not None and str(cause) not in said:
        said += f" (cause: {type(cause).__name__}: {cause})"
    return " ".join(said.split())  # a message's own newlines would split the line


class FirstFailures:
    """Which batches met which error classes in this process: a traceback is logged for the first only."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: set[tuple[str, str]] = set()

    def is_first(self, batch_id: str | None, exc: BaseException) -> bool:
        """True the first time batch ``batch_id`` (None: a message naming none) fails with ``exc``'s class."""
        key = (batch_id or "", type(exc).__qualname__)
        with self._lock:
            if key in self._seen:
                return False
            if len(self._seen) >= _MAX_REMEMBERED:
                self._seen.clear()
            self._seen.add(key)
            return True
