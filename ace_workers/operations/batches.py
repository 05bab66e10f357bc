"""Operations on one batch: its report (``status``) and cancelling it.

Sending work (``batch resume``, ``enqueue``) needs the dispatcher and stays with its commands.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..distributed.producer.batch_report import BatchReport
from ..distributed.store.batches import BatchState, BatchStatus
from ..distributed.store.fill import skillbook_fill
from ..distributed.store.worker_records import fresh_consumers
from .access import require_role
from .fleet import FleetClient
from .principal import Principal

__all__ = ["CancelResult", "batch_report", "cancel_batch"]


def batch_report(
    fleet: FleetClient,
    principal: Principal,
    batch_id: str,
    *,
    consumers: Callable[[str], list[str]] | None = None,
) -> BatchReport:
    """The report on ``batch_id``: state and counts, its skillbook's fill, the workers serving its
    write queue, the failures; what ``status --json`` prints and the console's batch page shows.

    ``consumers``: who consumes a queue, if the caller knows already (the console keeps the
    workers' last answer to a broadcast); by default the workers' records in Redis say.

    Raises:
        BatchNotFoundError: no such batch.
        ForeignSkillbookError, RoleTooLowError: ``principal`` may not read its skillbook.
    """
    status = fleet.batches.status(batch_id)
    require_role(fleet, principal, "read", status.skillbook)
    write_queue = fleet.settings.write_queue(status.skillbook)
    if consumers is None:
        writers = fresh_consumers(fleet.worker_records(), write_queue)
    else:
        writers = consumers(write_queue)
    return BatchReport(
        status=status,
        fill=skillbook_fill(fleet.store(status.skillbook)),
        write_queue=write_queue,
        writers=writers,
        errors=fleet.batches.errors(batch_id),
    )


@dataclass(frozen=True)
class CancelResult:
    """The batch's status after the request; ``cancelled_now`` false if it had ended already."""

    status: BatchStatus
    cancelled_now: bool


def cancel_batch(fleet: FleetClient, principal: Principal, batch_id: str) -> CancelResult:
    """Stop ``batch_id``: steps not yet run are skipped, its admission slots go to other batches.

    Raises:
        BatchNotFoundError: no such batch.
        ForeignSkillbookError, RoleTooLowError: ``principal`` may not learn on its skillbook.
    """
    status = fleet.batches.status(batch_id)
    require_role(fleet, principal, "learn", status.skillbook)
    if status.state is not BatchState.RUNNING:
        return CancelResult(status, cancelled_now=False)
    fleet.batches.cancel(batch_id)
    fleet.admission.forget(batch_id)
    return CancelResult(fleet.batches.status(batch_id), cancelled_now=True)
