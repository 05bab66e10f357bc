"""One chain per sample: one step message per step, each routed to the queue its step belongs on."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..store.keys import DEFAULT_TENANT
from .dispatch import Dispatcher, SampleChain, StepMessage
from .errors import UnknownStepError
from .fleet import recipe_shape
from .task_names import STEP_TASK
from .trace_context import traced_send, with_carrier

__all__ = ["STEP_TASK", "enqueue_epoch", "sample_chain"]


def sample_chain(
    dispatch: Dispatcher,
    payload: dict[str, Any],
    *,
    recipe: str,
    skillbook: str,
    batch_id: str,
    epoch: int,
    sample_index: int,
    start: int = 0,
    tenant: str = DEFAULT_TENANT,
) -> SampleChain:
    """The chain of step messages for one sample from step ``start`` on (``dispatch.send_chain`` sends it).

    The first task gets the payload, each next one the previous task's result. ``tenant`` is
    the batch's (its record's ``tenant``): every step checks it still owns the skillbook.
    """
    runtime = dispatch.runtime
    routes = runtime.routes(recipe)
    if not 0 <= start < len(routes):
        raise UnknownStepError(recipe, start, len(routes))
    # Each task carries the shape of the recipe it was sent for: a worker that has other steps
    # for it (its settings differ) fails the sample, naming the setting, rather than run a step
    # that means something else there.
    shape = recipe_shape(runtime, recipe, routes)
    steps = tuple(
        StepMessage(
            queue=runtime.queue(route.queue_role, skillbook),
            step=route.name,
            kwargs={
                "recipe": recipe,
                "skillbook": skillbook,
                "index": route.index,
                "batch_id": batch_id,
                "epoch": epoch,
                "sample_index": sample_index,
                "shape": shape,
                "tenant": tenant,
            },
        )
        for route in routes[start:]
    )
    return SampleChain(payload, steps)


def enqueue_epoch(
    dispatch: Dispatcher,
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
    runtime = dispatch.runtime
    sent = 0
    for sample_index, payload in enumerate(payloads, start=first_index):
        # The sample's trace starts here (see trace_context); its carrier is kept for re-sends.
        with traced_send(
            recipe=recipe, skillbook=skillbook, batch_id=batch_id, epoch=epoch, sample_index=sample_index
        ) as carrier:
            runtime.batches.record_sent(batch_id, epoch, sample_index, trace_context=carrier)
            chain = sample_chain(
                dispatch,
                with_carrier(payload, carrier),
                recipe=recipe,
                skillbook=skillbook,
                batch_id=batch_id,
                epoch=epoch,
                sample_index=sample_index,
                tenant=tenant,
            )
            dispatch.send_chain(chain)
        sent += 1
    return sent
