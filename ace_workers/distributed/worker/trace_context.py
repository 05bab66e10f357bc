"""One trace per sample across workers: the W3C trace context rides in the step payload.

Whoever sends a sample's chain (a producer for epoch 1, the worker that finishes
an epoch for the next) opens the sample's ``ace.sample`` span and puts its
carrier (``{"traceparent": ...}``) in the first step's payload under
:data:`TRACE_CONTEXT_KEY`. Each task opens its ``ace.step <Step>`` span as a
child of that context and copies the carrier into the payload it returns,
which Celery hands to the chain's next task, on whatever queue and worker.
So the context survives:

- the hop to another queue (the write queue): it is in the next task's argument;
- a retry (``self.retry``) and a redelivery: the message's payload is unchanged;
- a dead letter sent again: the letter keeps the payload it failed with;
- a re-send by the reconciler, which rebuilds the payload from the stored input:
  the carrier was kept in the batch ledger when the sample was sent
  (``BatchStore.record_sent``) and is put back.

No Celery message headers are used: a chain's next message is built by Celery
from the signature, and headers of the message before it are not carried over.
With tracing off the carrier is empty and nothing is added anywhere.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from ...observability.spans import (
    ATTR_BATCH_ID,
    ATTR_EPOCH,
    ATTR_RECIPE,
    ATTR_SAMPLE_INDEX,
    ATTR_SKILLBOOK,
    ATTR_STEP_INDEX,
    traced_sample,
    traced_step,
)
from ...observability.tracing import flush_tracing
from .delivery import StepDelivery

__all__ = [
    "TRACE_CONTEXT_KEY",
    "carrier_of",
    "flush_spans",
    "sample_attributes",
    "traced_send",
    "traced_task",
    "with_carrier",
]

logger = logging.getLogger(__name__)

# The payload key of a sample's trace context (a W3C traceparent carrier).
TRACE_CONTEXT_KEY = "otel"
ATTR_WORKER = "ace.worker"
ATTR_QUEUE = "messaging.destination.name"
ATTR_TASK_ID = "celery.task_id"
ATTR_RETRIES = "celery.retries"


def carrier_of(payload: object) -> dict[str, str] | None:
    """The trace-context carrier a payload holds, or None."""
    carrier = payload.get(TRACE_CONTEXT_KEY) if isinstance(payload, Mapping) else None
    if not isinstance(carrier, Mapping):
        return None
    return {key: value for key, value in carrier.items() if isinstance(key, str) and isinstance(value, str)}


def with_carrier(payload: dict[str, Any], carrier: Mapping[str, str] | None) -> dict[str, Any]:
    """``payload`` carrying ``carrier`` (a copy); ``payload`` itself when there is none to carry."""
    if not carrier:
        return payload
    return {**payload, TRACE_CONTEXT_KEY: dict(carrier)}


def sample_attributes(
    *, recipe: str, skillbook: str, batch_id: str, epoch: int, sample_index: int
) -> dict[str, str | int]:
    """The span attributes that name a sample of a batch."""
    return {
        ATTR_RECIPE: recipe,
        ATTR_SKILLBOOK: skillbook,
        ATTR_BATCH_ID: batch_id,
        ATTR_EPOCH: epoch,
        ATTR_SAMPLE_INDEX: sample_index,
    }


@contextmanager
def traced_send(
    *, recipe: str, skillbook: str, batch_id: str, epoch: int, sample_index: int
) -> Iterator[dict[str, str]]:
    """The sample's root span around sending its chain; yields the carrier for its first payload."""
    attributes = sample_attributes(
        recipe=recipe, skillbook=skillbook, batch_id=batch_id, epoch=epoch, sample_index=sample_index
    )
    with traced_sample(attributes) as carrier:
        yield carrier


@contextmanager
def traced_task(
    payload: object,
    kwargs: Mapping[str, Any],
    step: str,
    delivery: StepDelivery,
    *,
    expected: tuple[type[BaseException], ...] = (),
) -> Iterator[dict[str, str]]:
    """Step ``step``'s span for one delivery of an ``ace.step`` task; yields the carrier to pass on."""
    attributes: dict[str, str | int | float | bool] = {
        key: value
        for key, value in (
            (ATTR_RECIPE, kwargs.get("recipe")),
            (ATTR_SKILLBOOK, kwargs.get("skillbook")),
            (ATTR_BATCH_ID, kwargs.get("batch_id")),
            (ATTR_EPOCH, kwargs.get("epoch")),
            (ATTR_SAMPLE_INDEX, kwargs.get("sample_index")),
            (ATTR_STEP_INDEX, kwargs.get("index")),
            (ATTR_WORKER, delivery.hostname or None),
            (ATTR_QUEUE, delivery.queue),
            (ATTR_TASK_ID, delivery.task_id),
            (ATTR_RETRIES, delivery.retries),
        )
        if isinstance(value, (str, int)) and not isinstance(value, bool)
    }
    with traced_step(step, carrier_of(payload), attributes, expected=expected) as carrier:
        yield carrier


def flush_spans(**_: object) -> None:
    """Export buffered spans; a worker (or a prefork child) that shuts down calls it (celery_worker.py)."""
    try:
        flush_tracing()
    except Exception:  # a collector that is down must not turn a clean stop into a crash
        logger.exception("could not flush the last spans")
