"""One Celery chain per sample: one task per step, each routed to the queue its step belongs on."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from celery import Celery, chain

from ..store.keys import DEFAULT_TENANT
from .app import WORKER_PUBLISH_RETRY_POLICY
from .errors import UnknownStepError
from .fleet import recipe_shape
from .runtime import WorkerRuntime
from .trace_context import traced_send, with_carrier

__all__ = ["STEP_TASK", "enqueue_epoch", "sample_chain"]

STEP_TASK = "ace.step"


def sample_chain(
    app: Celery,
    runtime: WorkerRuntime,
    payload: dict[str, Any],
    *,
    recipe: str,
    skillbook: str,
    batch_id: str,
    epoch: int,
    sample_index: int,
    start: int = 0,
    tenant: str = DEFAULT_TENANT,
) -> Any:
    """The chain of step tasks for one sample from step ``start`` on.

    The first task gets the payload, each next one the previous task's result. ``tenant`` is
    the batch's (its record's ``tenant``): every step checks it still owns the skillbook.
    """
    _, routes = runtime.pipeline(recipe, skillbook)
    if not 0 <= start < len(routes):
        raise UnknownStepError(recipe, start, len(routes))
    # Each task carries the shape of the recipe it was sent for: a worker that has other steps
    # for it (its settings differ) fails the sample, naming the setting, rather than run a step
    # that means something else there.
    shape = recipe_shape(runtime, recipe, routes)
    signatures = []
    for route in routes[start:]:
        kwargs = {
            "recipe": recipe,
            "skillbook": skillbook,
            "index": route.index,
            "batch_id": batch_id,
            "epoch": epoch,
            "sample_index": sample_index,
            "shape": shape,
            "tenant": tenant,
        }
        args = (payload,) if route.index == start else ()
        # Every step after the first is published by the worker that ran the one before it.
        options: dict[str, Any] = (
            {"retry_policy": dict(WORKER_PUBLISH_RETRY_POLICY)} if route.index > start else {}
        )
        signatures.append(
            app.signature(
                STEP_TASK,
                args=args,
                kwargs=kwargs,
                queue=runtime.queue(route.queue_role, skillbook),
                # Flower and the logs show the step's own name rather than the generic task.
                shadow=f"ace.{route.name}",
                # No result is stored (the task ignores it), so nobody waits for one: without this
                # the sender subscribes to every task's result channel, and a producer's memory
                # grows with each sample it sends.
                ignore_result=True,
                **options,
            )
        )
    return chain(*signatures)


def enqueue_epoch(
    app: Celery,
    runtime: WorkerRuntime,
    payloads: Iterable[dict[str, Any]],
    *,
    recipe: str,
    skillbook: str,
    batch_id: str,
    epoch: int,
    first_index: int = 1,
    tenant: str = DEFAULT_TENANT,
) -> int:
    """Send one chain per payload, counting each in the batch before it goes; return how many were sent.

    Samples are numbered from ``first_index`` (above 1 when resuming an epoch half sent);
    ``tenant`` is the batch's, carried by every step message (see :func:`sample_chain`).
    The batch stored its inputs before (``BatchStore.store_items``): later epochs are
    built from them, and the reconciler sends a lost sample again from its stored input.

    Nothing per sample is kept here, so a stream of any length costs constant memory;
    outcomes are read from the batch record.
    """
    sent = 0
    for sample_index, payload in enumerate(payloads, start=first_index):
        # The sample's trace starts here (see trace_context); its carrier is kept for re-sends.
        with traced_send(
            recipe=recipe, skillbook=skillbook, batch_id=batch_id, epoch=epoch, sample_index=sample_index
        ) as carrier:
            runtime.batches.record_sent(batch_id, epoch, sample_index, trace_context=carrier)
            sample_chain(
                app,
                runtime,
                with_carrier(payload, carrier),
                recipe=recipe,
                skillbook=skillbook,
                batch_id=batch_id,
                epoch=epoch,
                sample_index=sample_index,
                tenant=tenant,
            ).apply_async()
        sent += 1
    return sent
