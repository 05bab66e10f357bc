"""The reconciler: the batch ledger, not the broker, decides when a sample is lost, and sends it again.

A broker can lose a message (kombu's Redis transport between BRPOP and its
unacked record, a Redis restart that loses the last writes, a consumer that
silently stops). The batch knows every sample it sent and every one that
finished, and when each last made progress; a sample with no progress for
longer than a step can take to come back by itself (the visibility timeout
plus the longest retry backoff) is sent again.

It is sent again **from its first step**, from the input stored in the batch.
The intermediate payloads live only in the broker's messages (storing each
would double the Redis writes of every step), and every write a step makes
is idempotent by its (batch, sample, step) key, so running the early steps
again costs their LLM calls and writes nothing twice.

A sample that merely waits its turn is not lost: nothing is sent again while
its batch as a whole still progresses, or while the recipe's queues hold
messages (someone will take them). After ``max_redrives`` re-sends a sample
is failed and dead-lettered. One reconciler runs at a time (a lock).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from redis import RedisError

from ..connections import is_amqp
from ..settings import WorkerSettings
from ..store.batches import BatchState, BatchStatus, sample_key
from ..store.keys import batch_key
from ..store.locks import try_lock
from .admission import resume, tend_admission
from .chains import sample_chain
from .dead_letters import park_dead_letter
from .deferrals import parked_samples, release_deferred, release_for_batch
from .dispatch import Dispatcher
from .epochs import epoch_payload
from .errors import BrokerUnavailable
from .finishing import start_next_epoch
from .retries import total_backoff_bound
from .runtime import WorkerRuntime
from .task_names import RECONCILE_TASK
from .trace_context import with_carrier

__all__ = [
    "RECONCILER",
    "abandon_batch",
    "RECONCILE_TASK",
    "ReconcileReport",
    "reconcile_batch",
    "reconcile_running",
    "reconcile_schedule",
    "lost_after_seconds",
]

logger = logging.getLogger(__name__)

# The step name failed samples and dead letters carry when the reconciler gives up on them.
RECONCILER = "Reconciler"
# Longer than one batch's reconciliation takes; a reconciler that died frees it by then.
RECONCILE_LOCK_SECONDS = 60


@dataclass
class ReconcileReport:
    """What one reconciliation did: samples sent again, and samples given up on."""

    batches: int = 0
    redriven: list[str] = field(default_factory=list)
    given_up: list[str] = field(default_factory=list)
    released: int = 0  # deferred samples sent on (their tenant's budget has room again)

    def add(self, other: ReconcileReport) -> None:
        self.batches += other.batches
        self.released += other.released
        self.redriven += other.redriven
        self.given_up += other.given_up


def lost_after_seconds(settings: WorkerSettings) -> float:
    """How long a sample may go without progress before it counts as lost.

    A message held by a worker that died comes back after the visibility timeout,
    and retries wait at most the backoff bound on top.
    """
    backoff = total_backoff_bound(
        settings.task_max_retries,
        settings.retry_backoff_seconds,
        amqp=bool(settings.broker_url and is_amqp(settings.broker_url)),
    )
    return float(settings.visibility_timeout_seconds + backoff)


def reconcile_batch(dispatch: Dispatcher, batch_id: str, *, now: float | None = None) -> ReconcileReport:
    """Send again the lost samples of one batch; take it off the running set if it is done.

    One reconciler per batch at a time (a lock): a waiting producer, beat's task
    and the nightly job may all look at the same batch.
    """
    runtime = dispatch.runtime
    report = ReconcileReport(batches=1)
    key = batch_key(runtime.settings.queue_prefix, batch_id, "reconciling")
    with try_lock(runtime.redis, key, RECONCILE_LOCK_SECONDS) as held:
        if held:
            _reconcile(dispatch, batch_id, time.time() if now is None else now, report)
    return report


def _reconcile(dispatch: Dispatcher, batch_id: str, now: float, report: ReconcileReport) -> None:
    runtime = dispatch.runtime
    batches = runtime.batches
    try:
        status = batches.status(batch_id)
    except LookupError:
        batches.forget_running(batch_id)  # expired: nothing left to do
        return
    if status.state is not BatchState.RUNNING:  # done, or cancelled
        batches.forget_running(batch_id)
        return
    if status.waiting_for_budget:
        # A budget window that reset is noticed here too (a waiting producer, without beat).
        report.released += release_for_batch(dispatch, batch_id)
    cutoff = now - lost_after_seconds(runtime.settings)
    if status.progress_at > cutoff or _messages_waiting(dispatch, status.recipe, status.skillbook):
        return
    stalled = batches.stalled(batch_id, cutoff)
    # A sample waiting for its tenant's budget is not lost: its step is parked until the budget has room.
    parked = parked_samples(runtime, batch_id) if status.waiting_for_budget else set()
    for epoch, index in stalled:
        if (epoch, index) not in parked:
            _redrive(dispatch, status, epoch, index, report)
    # A worker that died between finishing an epoch and sending the next (or mid-epoch)
    # left samples never sent: send them too.
    status = batches.status(batch_id)
    if status.state is BatchState.RUNNING and status.sealed:
        resume(dispatch, batch_id)  # with admission on: up to what is admitted


def reconcile_running(dispatch: Dispatcher) -> ReconcileReport:
    """Send on the deferred samples whose budget has room, reconcile every running batch, tend admission."""
    runtime = dispatch.runtime
    report = ReconcileReport()
    # A budget window that reset is noticed here; a raised budget at once (ace-workers tenant set).
    try:
        report.released = release_deferred(dispatch)
    except (BrokerUnavailable, RedisError) as exc:  # the batches are reconciled all the same
        logger.warning("reconciler: deferred samples not sent on this round: %s", exc)
    for batch_id in runtime.batches.running():
        report.add(reconcile_batch(dispatch, batch_id))
    # Admission's slots of finishes never told, and grants never sent, healed from the batch records.
    tend_admission(dispatch)
    if report.redriven or report.given_up:
        logger.warning(
            "reconciler: %d samples sent again, %d given up, over %d running batches",
            len(report.redriven),
            len(report.given_up),
            report.batches,
        )
    return report


def reconcile_schedule(settings: WorkerSettings) -> dict[str, dict[str, Any]]:
    """The beat entry of the reconciler, on the execute queue (like the nightly runs)."""
    interval = settings.reconcile_interval_seconds
    return {
        "reconcile": {
            "task": RECONCILE_TASK,
            "schedule": timedelta(seconds=interval),
            # A firing no worker took in time is superseded by the next one.
            "options": {"queue": settings.queue_names()["execute"], "expires": interval},
        }
    }


def _redrive(
    dispatch: Dispatcher, status: BatchStatus, epoch: int, index: int, report: ReconcileReport
) -> None:
    runtime = dispatch.runtime
    batches, batch_id = runtime.batches, status.batch_id
    key = f"{batch_id}:{sample_key(epoch, index)}"
    count = batches.record_redrive(batch_id, epoch, index)
    payload = _stored_payload(runtime, status, epoch, index)
    if count > runtime.settings.max_redrives:
        _give_up(
            dispatch, status, epoch, index, payload, f"LostSample: no progress after {count - 1} re-sends"
        )
        report.given_up.append(key)
        return
    logger.warning("batch %s: sample %s made no progress; sent again (%d)", batch_id, key, count)
    chain = sample_chain(
        dispatch,
        # In the trace the sample was first sent in: its steps run again below the same sample span.
        with_carrier(payload, batches.trace_context(batch_id, epoch, index)),
        recipe=status.recipe,
        skillbook=status.skillbook,
        batch_id=batch_id,
        epoch=epoch,
        sample_index=index,
        tenant=status.tenant,
    )
    dispatch.send_chain(chain)
    runtime.metrics.observe_redrive(status.skillbook)
    report.redriven.append(key)


def _stored_payload(runtime: WorkerRuntime, status: BatchStatus, epoch: int, index: int) -> dict[str, Any]:
    """Sample ``index``'s first-step payload in ``epoch``, from the input its batch stored."""
    item = runtime.batches.item(status.batch_id, index)
    return epoch_payload(
        runtime, item, epoch=epoch, epochs=status.epochs, index=index, total=status.per_epoch
    )


def _give_up(
    dispatch: Dispatcher,
    status: BatchStatus,
    epoch: int,
    index: int,
    payload: dict[str, Any],
    error: str,
) -> None:
    """Fail a sample the ledger gives up on, for ``error``; its letter (from step one) can be retried."""
    runtime = dispatch.runtime
    batch_id = status.batch_id
    logger.error("batch %s: sample %s: %s", batch_id, sample_key(epoch, index), error)
    kwargs = {
        "recipe": status.recipe,
        "skillbook": status.skillbook,
        "index": 0,
        "batch_id": batch_id,
        "epoch": epoch,
        "sample_index": index,
    }
    park_dead_letter(runtime, task_id=None, step=RECONCILER, kwargs=kwargs, payload=payload, error=error)
    sample = payload.get("sample")
    finished = runtime.batches.record_failure(
        batch_id, epoch, index, step=RECONCILER, error=error, sample=sample
    )
    start_next_epoch(dispatch, batch_id, epoch, finished)


def abandon_batch(dispatch: Dispatcher, batch_id: str, reason: str) -> list[str]:
    """Give up on a batch the ledger cannot finish; the keys of the samples given up.

    Its current epoch is made its last, and every sample of that epoch without an
    outcome is failed and dead-lettered with its stored input (``dead-letters retry``
    sends it from its first step), so the batch ends and nothing is lost. A message
    of such a sample still in the broker may run later: its writes are idempotent and
    its outcome is already recorded, so it changes no count.
    """
    runtime = dispatch.runtime
    batches = runtime.batches
    status = batches.status(batch_id)
    batches.end_at_epoch(batch_id, status.epoch)
    status = batches.status(batch_id)
    given_up = []
    for index in batches.unfinished_in_epoch(batch_id, status.epoch):
        payload = _stored_payload(runtime, status, status.epoch, index)
        _give_up(dispatch, status, status.epoch, index, payload, f"Abandoned: {reason}")
        given_up.append(f"{batch_id}:{sample_key(status.epoch, index)}")
    batches.forget_running(batch_id)
    return given_up


def _messages_waiting(dispatch: Dispatcher, recipe: str, skillbook: str) -> bool:
    """True if a queue of the recipe's steps holds messages (someone will take them), or none can be asked."""
    runtime = dispatch.runtime
    try:
        depths = dispatch.queue_depths(
            {runtime.queue(route.queue_role, skillbook) for route in runtime.routes(recipe)}
        )
    except BrokerUnavailable as exc:
        logger.warning("reconciler: %s; nothing sent again this round", exc)
        return True
    return any(depths.values())
