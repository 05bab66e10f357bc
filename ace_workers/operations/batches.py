"""Operations on batches: the list of them, one's report (``status``), cancelling and resuming one.

Sending work needs the dispatcher, which a FleetClient does not hold: ``enqueue`` stays with its
command, and :func:`resume_batch` checks and is handed the sending by its caller.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..distributed.producer.batch_report import BatchReport
from ..distributed.store.batches import RECENT_BATCHES, BatchState, BatchStatus
from ..distributed.store.fill import skillbook_fill
from ..distributed.store.worker_records import fresh_consumers
from ..distributed.tenancy.api_keys import can_see
from .access import LEARN, READ, require_role
from .errors import BatchNotResumableError
from .fleet import FleetClient
from .principal import Principal

__all__ = ["CancelResult", "ResumeResult", "batch_report", "cancel_batch", "list_batches", "resume_batch"]


def list_batches(
    fleet: FleetClient, principal: Principal, *, running_only: bool = False, limit: int = 50
) -> list[BatchStatus]:
    """The running batches and the ``limit`` most recent ones (``running_only``: the running ones
    only), of the skillbooks ``principal`` may see, newest first.

    A batch whose records expired since it was listed is left out.
    """
    batches = fleet.batches
    recent = [] if running_only else [batch_id for batch_id, _ in batches.recent(min(limit, RECENT_BATCHES))]
    tenants = None if principal.fleet_wide else fleet.tenant_map()
    found: list[BatchStatus] = []
    # The running ones too: some may be older than the recent ones listed.
    for status in batches.statuses([*batches.running(), *recent]):
        if running_only and status.state is not BatchState.RUNNING:
            continue  # finished, not yet taken off the running set
        if tenants is None or can_see(principal.scope, status.skillbook, tenants):
            found.append(status)
    return sorted(found, key=lambda status: status.created, reverse=True)


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
    require_role(fleet, principal, READ, status.skillbook)
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
    require_role(fleet, principal, LEARN, status.skillbook)
    if status.state is not BatchState.RUNNING:
        return CancelResult(status, cancelled_now=False)
    fleet.batches.cancel(batch_id)
    fleet.admission.forget(batch_id)
    return CancelResult(fleet.batches.status(batch_id), cancelled_now=True)


@dataclass(frozen=True)
class ResumeResult:
    """The batch's status when asked; what was sent now (none for a batch that had ended)."""

    status: BatchStatus
    sent: int
    redriven: int


def resume_batch(
    fleet: FleetClient,
    principal: Principal,
    batch_id: str,
    send: Callable[[BatchStatus], tuple[int, int]],
) -> ResumeResult:
    """Send what a running batch never sent, and again what was lost: ``send`` does it (it needs the
    dispatcher) and answers (sent, sent again). A batch that has ended is left as it is.

    Raises:
        BatchNotFoundError: no such batch.
        ForeignSkillbookError, RoleTooLowError: ``principal`` may not learn on its skillbook.
        BatchNotResumableError: its producer died while storing its inputs.
    """
    status = fleet.batches.status(batch_id)
    require_role(fleet, principal, LEARN, status.skillbook)
    if status.state is not BatchState.RUNNING:
        return ResumeResult(status, sent=0, redriven=0)
    if not status.fully_stored:
        raise BatchNotResumableError(batch_id, status.stored, status.per_epoch)
    sent, redriven = send(status)
    return ResumeResult(status, sent=sent, redriven=redriven)
