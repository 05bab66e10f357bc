"""Starting an epoch, or finishing the start of one half sent: one way, used by workers and the nightly job.

A batch counts the samples it sent (``enqueued``). Whoever finds an epoch not wholly
sent (the task that completes the previous epoch, its redelivery, a nightly run that
crashed mid-send) sends the rest from that count on, under the batch's short epoch-start
lock so two senders never send the same samples at once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

from celery import Celery

from ..settings import WorkerSettings
from .chains import enqueue_epoch
from .payload import context_to_payload, payload_to_context
from .runtime import WorkerRuntime

__all__ = ["epoch_lock_seconds", "epoch_payload", "send_rest_of_epoch"]

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


def send_rest_of_epoch(
    app: Celery,
    runtime: WorkerRuntime,
    batch_id: str,
    epoch: int,
    load_items: Callable[[], Iterable[dict[str, Any]]],
) -> int:
    """Send the samples of ``epoch`` the batch has not counted as sent; return how many were sent.

    ``load_items`` gives the batch's stored inputs (read only when something is left to
    send, and streamed). A sample counted just before a crash but never sent is the
    reconciler's to send again. A batch whose producer died while storing its inputs
    cannot be finished from them: nothing is sent, and the log says what to do.
    """
    batches = runtime.batches
    status = batches.status(batch_id)
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
        payloads = (
            epoch_payload(
                runtime, item, epoch=epoch, epochs=status.epochs, index=index, total=status.per_epoch
            )
            for index, item in enumerate(load_items(), start=1)
            if index > sent
        )
        return enqueue_epoch(
            app,
            runtime,
            payloads,
            recipe=status.recipe,
            skillbook=status.skillbook,
            batch_id=batch_id,
            epoch=epoch,
            first_index=sent + 1,
        )
