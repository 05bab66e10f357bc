"""Step messages published as someone with access to the broker would: straight onto a queue.

And dead letters parked as a worker parks them.
"""

from __future__ import annotations

import json
from typing import Any

import redis

from ace_workers.core import ACEStepContext
from ace_workers.distributed.service import Service
from ace_workers.distributed.store.keys import dead_letters_key
from ace_workers.distributed.worker.chains import STEP_TASK, sample_chain
from ace_workers.distributed.worker.payload import context_to_payload
from ace_workers.sim import failure_traces


def trace_payload(service: Service) -> dict[str, Any]:
    """The payload a producer of ours sends for one simulated trace."""
    return context_to_payload(ACEStepContext(trace=failure_traces(1)[0]), claims=service.runtime.claims)


def publish_step(
    service: Service,
    payload: dict[str, Any],
    *,
    batch_id: str,
    recipe: Any = "trace_analyser",
    create_batch: bool = True,
    tenant: Any = None,
) -> None:
    """Publish step 0 of ``recipe`` on ``payload`` to the learn queue, as sample 1 of ``batch_id``.

    With ``create_batch``, a one-sample batch is recorded for it first (the sample counted
    as sent), so the failure it meets is recorded there; without, the batch does not exist.
    ``tenant``: the message names it (None: the message has no tenant, as before tenants).
    """
    runtime = service.runtime
    if create_batch:
        create_one_sample_batch(service, batch_id)
    kwargs = first_step_kwargs(recipe, batch_id)
    if tenant is not None:
        kwargs["tenant"] = tenant
    service.app.send_task(STEP_TASK, args=[payload], kwargs=kwargs, queue=runtime.queue("learn"))


def first_step_kwargs(recipe: Any, batch_id: str) -> dict[str, Any]:
    """The kwargs of step 0 of ``recipe`` on skillbook "book", for sample 1 of ``batch_id``."""
    return {
        "recipe": recipe,
        "skillbook": "book",
        "index": 0,
        "batch_id": batch_id,
        "epoch": 1,
        "sample_index": 1,
    }


def publish_chain(service: Service, payload: dict[str, Any], *, batch_id: str) -> None:
    """Publish the whole trace_analyser chain on ``payload``, as sample 1 of a new one-sample batch."""
    create_one_sample_batch(service, batch_id)
    chain = sample_chain(
        service.dispatcher,
        payload,
        recipe="trace_analyser",
        skillbook="book",
        batch_id=batch_id,
        epoch=1,
        sample_index=1,
    )
    service.dispatcher.send_chain(chain)


def create_one_sample_batch(service: Service, batch_id: str) -> None:
    """Record a batch of one trace_analyser sample, counted as sent."""
    batches = service.runtime.batches
    batches.create(
        batch_id, skillbook="book", recipe="trace_analyser", per_epoch=1, epochs=1, skills_at_start=0
    )
    batches.record_sent(batch_id, 1, 1)


def park_letter(client: redis.Redis, prefix: str, *, recipe: str, batch_id: str) -> None:
    """Park a dead letter as the step task writes one: step 0 (ReflectStep) of ``recipe``, sample 1."""
    letter = {
        "task_id": "t",
        "step": "ReflectStep",
        "kwargs": first_step_kwargs(recipe, batch_id),
        "payload": context_to_payload(ACEStepContext(trace=failure_traces(1)[0])),
        "error": "LLMError: earlier",
    }
    client.rpush(dead_letters_key(prefix), json.dumps(letter))
