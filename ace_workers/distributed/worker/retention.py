"""What ``ace.retention`` does: the nightly sweep of records past their retention, on a worker."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from ..store.retention import sweep
from .runtime import WorkerRuntime

__all__ = ["sweep_fleet_retention"]

logger = logging.getLogger(__name__)


def sweep_fleet_retention(runtime: WorkerRuntime) -> dict[str, int]:
    """Trim every kind of record past its bound (the ACE_RETENTION_* settings); the counts removed."""
    settings = runtime.settings
    counts = sweep(runtime.redis, settings.queue_prefix, settings.retention_policy(), datetime.now(UTC))
    logger.info(
        "retention: removed %s", ", ".join(f"{count} {kind}" for kind, count in counts.items()) or "nothing"
    )
    return counts
