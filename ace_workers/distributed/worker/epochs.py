"""Resuming a batch: starting an epoch, or finishing the start of one half sent, in one way.

A batch counts the samples it sent (``enqueued``). Whoever finds an epoch not wholly
sent (the task that completes the previous epoch, its redelivery, the reconciler, a
nightly run or a producer that crashed mid-send, ``ace-workers batch resume``) calls
:func:`resume_batch`, which sends the rest from that count on, from the batch's stored
inputs, under the batch's short epoch-start lock so two senders never send the same
samples at once. Producers reach it as ``Producer.resume(batch_id)``. With admission on
(ACE_ADMISSION_WINDOW), callers go through :func:`~.admission.resume` instead, which sends only
what the fleet's window admitted, from the same count on, under the same lock.
"""

from __future__ import annotations

import logging
from typing import Any

from ..settings import WorkerSettings
from ..store.batches import BatchStatus, BatchStore
from .chains import enqueue_epoch
from .dispatch import Dispatcher
from .payload import context_to_payload, payload_to_context
from .runtime import WorkerRuntime

__all__ = ["current_epoch", "epoch_lock_seconds", "epoch_payload", "resume_batch", "send_samples"]

logger = logging.getLogger(__name__)


def epoch_lock_seconds(settings: WorkerSettings) -> int:
    """Lifetime of an epoch-start lock: long enough to send an epoch, short enough to retake after a crash."""
    return max(1, min(60, settings.visibility_timeout_seconds // 2))


def epoch_payload(
    runtime: WorkerRuntime, item: dict[str, Any], *, epoch: int, epochs: int, index: int, total: int
) -> dict[str, Any]:
    """The payload of sample ``index`` (from 1) of ``epoch``: its stored item with that epoch's counters."""
    ctx = payload_to_context(item, skillbook=None, claims=runtime.claims)
    ctx = ctx.replace(
        epoch=epoch,
        total_epochs=epochs,
        step_index=index,
        total_steps=total,
        global_sample_index=(epoch - 1) * total + index,
    )
    return context_to_payload(ctx, claims=runtime.claims)


def resume_batch(dispatch: Dispatcher, batch_id: str, *, epoch: int | None = None) -> int:
    """Send the samples of an epoch the batch has not counted as sent; return how many were sent.

    ``epoch`` defaults to where the batch stands: its current epoch, or the next one once
    every sample of the current one finished (the worker that completed it died before
    sending on). The samples come from the batch's stored inputs, streamed, read only when
    something is left to send. A sample counted just before a crash but never sent is the
    reconciler's to send again. A batch whose producer died while storing its inputs
    cannot be finished from them: nothing is sent, and the log says what to do.
    """
    runtime = dispatch.runtime
    batches = runtime.batches
    status = batches.status(batch_id)
    if epoch is None:
        epoch = current_epoch(batches, status)
    before = status.per_epoch * (epoch - 1)  # samples of the earlier epochs
    if status.enqueued - before >= status.per_epoch:
        return 0
    if not status.fully_stored:
        logger.error(
            "batch %s stores %d of its %d inputs (its producer died while storing them): it cannot "
            "be finished; cancel it (ace-workers batch cancel %s) and send the inputs again",
            batch_id,
            status.stored,
            status.per_epoch,
            batch_id,
        )
        return 0
    with batches.epoch_start_lock(batch_id, epoch, epoch_lock_seconds(runtime.settings)) as held:
        if not held:
            return 0  # another task (or run) is sending it right now
        # Counted again under the lock: the holder before us may have sent some or all of it.
        status = batches.status(batch_id)
        sent = max(0, status.enqueued - before)
        if sent >= status.per_epoch:
            return 0
        logger.info(
            "batch %s: sending samples %d to %d of epoch %d", batch_id, sent + 1, status.per_epoch, epoch
        )
        return send_samples(dispatch, status, epoch=epoch, first=sent + 1)


def send_samples(
    dispatch: Dispatcher,
    status: BatchStatus,
    *,
    epoch: int,
    first: int,
    last: int | None = None,
) -> int:
    """Send samples ``first`` to ``last`` (from 1; None: to the end) of ``epoch`` of the batch ``status``
    describes, built from its stored inputs; return how many were sent (fewer where inputs are missing).

    The caller holds the epoch's start lock: the samples are counted as sent as they go.
    """
    runtime = dispatch.runtime
    payloads = (
        epoch_payload(runtime, item, epoch=epoch, epochs=status.epochs, index=index, total=status.per_epoch)
        for index, item in enumerate(
            runtime.batches.iter_items(status.batch_id, first=first, last=last), start=first
        )
    )
    return enqueue_epoch(
        dispatch,
        payloads,
        recipe=status.recipe,
        skillbook=status.skillbook,
        batch_id=status.batch_id,
        epoch=epoch,
        first_index=first,
        tenant=status.tenant,
    )


def current_epoch(batches: BatchStore, status: BatchStatus) -> int:
    """The epoch a batch is in: the last one it sent to, or the next once that one finished."""
    finished = batches.finished_in_epoch(status.batch_id, status.epoch)
    return status.epoch + 1 if status.epoch < status.epochs and finished >= status.per_epoch else status.epoch
