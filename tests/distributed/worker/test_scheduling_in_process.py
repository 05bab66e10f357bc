"""The fleet's scheduling on the in-process dispatcher: real Redis, no broker, no worker.

Epochs, admission's window and fairness, the reconciler, budget waits and dead-letter retry
decide what is sent; :class:`InProcessDispatcher` keeps it, so each decision is checked as it is
made. The same scenarios run on Celery workers in test_admission_fleet.py, test_reconcile.py,
test_budget_on_workers.py, test_batches.py and test_batch_accounting_fleet.py.
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from ace_workers.core.context import ACEStepContext
from ace_workers.distributed.settings import WorkerSettings
from ace_workers.distributed.tenancy import Budget, Tenant, TenantRegistry
from ace_workers.distributed.tenancy.errors import BudgetExhaustedError
from ace_workers.distributed.worker.admission import resume, send_admitted
from ace_workers.distributed.worker.dead_letters import park_dead_letter, retry_dead_letters
from ace_workers.distributed.worker.deferrals import defer_step, release_deferred
from ace_workers.distributed.worker.dispatch import InProcessDispatcher, SampleChain
from ace_workers.distributed.worker.finishing import start_next_epoch
from ace_workers.distributed.worker.payload import context_to_payload
from ace_workers.distributed.worker.reconcile import lost_after_seconds, reconcile_batch
from ace_workers.distributed.worker.runtime import WorkerRuntime
from ace_workers.sim import failure_traces
from tests.support.recipes import TEST_RECIPES

RECIPE = "trace_analyser"


@pytest.fixture
def runtime(redis_url: str, redis_client: redis.Redis) -> Iterator[WorkerRuntime]:
    built = _runtime(redis_url)
    try:
        yield built
    finally:
        built.close()


def _runtime(redis_url: str, **settings: Any) -> WorkerRuntime:
    options = {"queue_prefix": f"t{uuid.uuid4().hex[:8]}", "recipes": TEST_RECIPES, **settings}
    return WorkerRuntime(WorkerSettings(redis_url=redis_url, **options), redis_url)


def stored_batch(runtime: WorkerRuntime, skillbook: str, inputs: int, *, epochs: int = 1) -> str:
    """A batch whose inputs are stored and nothing sent, as a producer leaves it before sending."""
    batch_id = uuid.uuid4().hex
    runtime.batches.create(
        batch_id,
        skillbook=skillbook,
        recipe=RECIPE,
        per_epoch=inputs,
        epochs=epochs,
        skills_at_start=0,
        tenant=runtime.tenants.tenant_of(skillbook),
    )
    payloads = (
        context_to_payload(
            ACEStepContext(trace=trace).replace(
                epoch=1, total_epochs=epochs, step_index=index, total_steps=inputs, global_sample_index=index
            ),
            claims=runtime.claims,
        )
        for index, trace in enumerate(failure_traces(inputs), start=1)
    )
    runtime.batches.store_items(batch_id, payloads)
    return batch_id


def finish(dispatch: InProcessDispatcher, chain: SampleChain) -> None:
    """What the chain's last step does: count the sample done, then free its slot and start what is due."""
    kwargs = chain.first.kwargs
    batch_id, epoch, index = kwargs["batch_id"], kwargs["epoch"], kwargs["sample_index"]
    start_next_epoch(
        dispatch, batch_id, epoch, dispatch.runtime.batches.record_done(batch_id, epoch, index, {})
    )


def test_an_epoch_finished_sends_the_next_and_a_redelivered_finish_sends_nothing(
    runtime: WorkerRuntime,
) -> None:
    dispatch = InProcessDispatcher(runtime)
    batch_id = stored_batch(runtime, "book", 3, epochs=2)
    assert resume(dispatch, batch_id, epoch=1) == 3
    first = dispatch.take()
    assert [sample[1:] for sample in _samples(first)] == [(1, 1), (1, 2), (1, 3)]
    for chain in first[:2]:
        finish(dispatch, chain)
    assert dispatch.chains == []  # epoch 2 waits for the last sample of epoch 1
    finish(dispatch, first[2])
    assert [sample[1:] for sample in dispatch.samples()] == [(2, 1), (2, 2), (2, 3)]
    start_next_epoch(dispatch, batch_id, 1, None)  # the last task of epoch 1, delivered again
    assert len(dispatch.chains) == 3
    assert runtime.batches.status(batch_id).enqueued == 6


def test_a_chain_goes_step_by_step_to_the_queues_of_its_routes(runtime: WorkerRuntime) -> None:
    dispatch = InProcessDispatcher(runtime)
    resume(dispatch, stored_batch(runtime, "book", 1))
    (chain,) = dispatch.chains
    queues = runtime.settings.queue_names()
    assert [(step.step, step.queue) for step in chain.steps] == [
        ("ReflectStep", queues["learn"]),
        ("TagStep", queues["write"]),
        ("UpdateStep", queues["learn"]),
        ("ApplyStep", queues["write"]),
    ]
    assert [step.kwargs["index"] for step in chain.steps] == [0, 1, 2, 3]


def test_admission_keeps_the_window_and_a_freed_chunk_goes_to_the_tenant_with_fewer_in_flight(
    redis_url: str, redis_client: redis.Redis
) -> None:
    runtime = _runtime(redis_url, admission_window=4)
    try:
        registry = TenantRegistry(runtime.redis, prefix=runtime.settings.queue_prefix)
        registry.add(Tenant("a", prefixes=("a-",)))
        registry.add(Tenant("b", prefixes=("b-",)))
        dispatch = InProcessDispatcher(runtime)
        first = stored_batch(runtime, "a-book", 10)
        second = stored_batch(runtime, "b-book", 10)
        assert resume(dispatch, first, epoch=1) == 4  # the whole window
        assert resume(dispatch, second, epoch=1) == 0  # nothing free
        flying = dispatch.take()
        finish(dispatch, flying[0])
        assert dispatch.take_hand_offs() == []  # one slot free: less than a chunk (half the window)
        finish(dispatch, flying[1])
        hand_offs = dispatch.take_hand_offs()
        assert [hand_off.batch_id for hand_off in hand_offs] == [second]  # b has none in flight
        assert hand_offs[0].queue == runtime.queue("learn")  # its first step's queue
        assert send_admitted(dispatch, second) == 2
        assert [sample[0] for sample in dispatch.samples()] == [second, second]
        assert send_admitted(dispatch, second) == 0  # told twice, sends nothing more
    finally:
        runtime.close()


def test_the_reconciler_sends_lost_samples_again_but_not_while_their_queue_holds_messages(
    runtime: WorkerRuntime,
) -> None:
    dispatch = InProcessDispatcher(runtime)
    batch_id = stored_batch(runtime, "book", 2)
    resume(dispatch, batch_id)
    later = time.time() + lost_after_seconds(runtime.settings) + 1
    assert reconcile_batch(dispatch, batch_id, now=later).redriven == []  # still on the queue
    dispatch.take()  # taken by workers that died: the broker lost them
    report = reconcile_batch(dispatch, batch_id, now=later)
    assert sorted(report.redriven) == [f"{batch_id}:e1:1", f"{batch_id}:e1:2"]
    assert sorted(sample[1:] for sample in dispatch.samples()) == [(1, 1), (1, 2)]
    assert [chain.first.kwargs["index"] for chain in dispatch.chains] == [0, 0]  # from the first step


def test_a_dead_letter_is_sent_back_from_its_failed_step_and_its_sample_reopened(
    runtime: WorkerRuntime,
) -> None:
    dispatch = InProcessDispatcher(runtime)
    batch_id = stored_batch(runtime, "book", 1)
    resume(dispatch, batch_id)
    (chain,) = dispatch.take()
    failed = chain.steps[2]  # UpdateStep
    park_dead_letter(
        runtime, task_id=None, step=failed.step, kwargs=failed.kwargs, payload=chain.payload, error="boom"
    )
    runtime.batches.record_failure(batch_id, 1, 1, step=failed.step, error="boom")
    assert runtime.batches.status(batch_id).failed == 1
    report = retry_dead_letters(dispatch)
    assert (report.sent, report.kept) == (1, [])
    (again,) = dispatch.chains
    assert [step.step for step in again.steps] == ["UpdateStep", "ApplyStep"]
    assert runtime.batches.status(batch_id).failed == 0  # reopened: counted once it finishes again


def test_a_sample_refused_by_its_budget_waits_and_is_sent_on_from_that_step_once_the_budget_is_raised(
    runtime: WorkerRuntime,
) -> None:
    registry = TenantRegistry(runtime.redis, prefix=runtime.settings.queue_prefix)
    registry.add(Tenant("a", prefixes=("a-",), budgets=(Budget(tokens_per_day=100),)))
    dispatch = InProcessDispatcher(runtime)
    batch_id = stored_batch(runtime, "a-book", 1)
    resume(dispatch, batch_id)
    (chain,) = dispatch.take()
    refused = chain.steps[2]  # UpdateStep: its LLM call found the day's tokens spent
    spent = BudgetExhaustedError(
        "a", "sim", "tokens_per_day", spent=100, budget=100, resets_at=time.time() + 3600
    )
    assert defer_step(
        runtime, spent, task_id=None, step=refused.step, kwargs=refused.kwargs, payload=chain.payload
    )
    assert runtime.batches.status(batch_id).waiting_for_budget == 1
    assert release_deferred(dispatch) == 0  # the budget is still spent: nothing is sent
    assert dispatch.chains == []
    registry.update("a", lambda tenant: dataclasses.replace(tenant, budgets=(Budget(tokens_per_day=1000),)))
    assert release_deferred(dispatch) == 1
    (again,) = dispatch.take()
    assert [step.step for step in again.steps] == ["UpdateStep", "ApplyStep"]  # on from the refused step
    assert release_deferred(dispatch) == 0  # claimed once: a second releaser sends nothing
    assert dispatch.chains == []


def _samples(chains: list[SampleChain]) -> list[tuple[str, int, int]]:
    return [
        (chain.first.kwargs["batch_id"], chain.first.kwargs["epoch"], chain.first.kwargs["sample_index"])
        for chain in chains
    ]
