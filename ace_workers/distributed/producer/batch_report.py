"""The report on one batch that ``ace-workers status --json`` prints and the web console shows.

One function makes it, so the command line and the console cannot drift apart: the batch's
state and counts, its skillbook's fill, the write queue of that skillbook and the workers
consuming it (asked by a broadcast bounded by ACE_WORKER_REPLY_SECONDS), and the failures.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..store.batches import BatchStatus
from ..store.fill import skillbook_fill

if TYPE_CHECKING:  # the report's type is read by thin clients, which load no worker runtime
    from ..worker.dispatch import Dispatcher

__all__ = ["BatchReport", "batch_report"]


@dataclass(frozen=True)
class BatchReport:
    """A batch's status, its skillbook's fill, who writes that skillbook, and the failed samples."""

    status: BatchStatus
    fill: dict[str, int]
    write_queue: str
    writers: list[str]
    errors: list[dict[str, Any]]

    def to_dict(self) -> dict[str, Any]:
        """The document ``status --json`` prints."""
        return {
            **self.status.to_dict(),
            "skillbook_fill": self.fill,
            "write_queue": self.write_queue,
            "write_queue_consumers": self.writers,
            "errors": self.errors,
        }


def batch_report(
    dispatch: Dispatcher,
    batch_id: str,
    *,
    consumers: Callable[[str], list[str]] | None = None,
) -> BatchReport:
    """The report on ``batch_id``; BatchNotFoundError (a LookupError) if there is no such batch.

    ``consumers``: who consumes a queue, if the caller knows already (the console keeps the
    answer of its last broadcast for a few seconds); by default the workers are asked.
    """
    runtime = dispatch.runtime
    status = runtime.batches.status(batch_id)
    settings = runtime.settings
    write_queue = settings.write_queue(status.skillbook)
    if consumers is None:
        writers = dispatch.queue_consumers([write_queue], settings.worker_reply_seconds).get(write_queue, [])
    else:
        writers = consumers(write_queue)
    return BatchReport(
        status=status,
        fill=skillbook_fill(runtime.store(status.skillbook)),
        write_queue=write_queue,
        writers=writers,
        errors=runtime.batches.errors(batch_id),
    )
