"""The report on one batch that ``ace-workers status --json`` prints and the web console shows.

One operation makes it (:func:`ace_workers.operations.batches.batch_report`), so the command
line and the console cannot drift apart: the batch's state and counts, its skillbook's fill,
the write queue of that skillbook and the workers consuming it, and the failures.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..store.batches import BatchStatus

__all__ = ["BatchReport"]


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
