"""Starting an epoch, or finishing the start of one half sent: one way, used by workers and the nightly job.

A batch counts the samples it sent (``enqueued``). Whoever finds an epoch not wholly
sent (the task that completes the previous epoch, its redelivery, a nightly run that
crashed mid-send) sends the rest from that count on, under the batch's short epoch-start
lock so two senders never send the same samples at once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from celery import Celery

from ..settings import WorkerSettings
from .chains import enqueue_epoch
from .payload import context_to_payload, payload_to_context
from .runtime import WorkerRuntime

__all__ = ["epoch_lock_seconds", "epoch_payload", "epoch_payloads", "send_rest_of_epoch"]

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


def epoch_payloads(
    runtime: WorkerRuntime, items: list[dict[str, Any]], epoch: int, epochs: int
) -> list[dict[str, Any]]:
    """The payloads of ``epoch``: the stored items with that epoch's counters."""
    return [
        epoch_payload(runtime, item, epoch=epoch, epochs=epochs, index=index, total=len(items))
        for index, item in enumerate(items, start=1)
    ]


def send_rest_of_epoch(
    app: Celery,
    runtime: WorkerRuntime,
    batch_id: str,
    epoch: int,
    load_items: Callable[[], list[dict[str, Any]]],
) -> int:
    """Send the samples of ``epoch`` the batch has not counted as sent; return how many were sent.

    ``load_items`` gives the batch's stored items (read only when something is left to
    send). A sample sent just before a crash but not yet counted goes again; its second
    delivery is recorded once and writes nothing twice (write scopes).
    """
    batches = runtime.batches
    status = batches.status(batch_id)
    before = status.per_epoch * (epoch - 1)  # samples of the earlier epochs
    if status.enqueued - before >= status.per_epoch:
        return 0
    with batches.epoch_start_lock(batch_id, epoch, epoch_lock_seconds(runtime.settings)) as held:
        if not held:
            return 0  # another task (or run) is sending it right now
        # Counted again under the lock: the holder before us may have sent some or all of it.
        status = batches.status(batch_id)
        sent = max(0, status.enqueued - before)
        if sent >= status.per_epoch:
            return 0
        items = load_items()
        logger.info("batch %s: sending samples %d to %d of epoch %d", batch_id, sent + 1, len(items), epoch)
        return enqueue_epoch(
            app,
            runtime,
            epoch_payloads(runtime, items, epoch, status.epochs)[sent:],
            recipe=status.recipe,
            skillbook=status.skillbook,
            batch_id=batch_id,
            epoch=epoch,
            first_index=sent + 1,
        )
