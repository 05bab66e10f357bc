"""Admission over real workers: a small tenant's batch is not starved by a big one, and lost slots heal.

The fleet runs in-process (real Celery workers on the test Redis) with the simulated LLM at no
latency. Progress is asserted by order and counts, never by time.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from ace_workers.distributed.producer.producer import BatchHandle
from ace_workers.distributed.service import Service, local_workers
from ace_workers.distributed.store.batches import BatchState, BatchStatus
from ace_workers.distributed.tenancy import Tenant, TenantRegistry
from ace_workers.distributed.worker import admission, finishing
from ace_workers.distributed.worker.admission import ADMIT_TASK, grant_chunk
from ace_workers.distributed.worker.reconcile import reconcile_running
from ace_workers.sim import failure_traces
from tests.support.waiting import wait_for
from tests.support.workers import build_test_service

TIMEOUT = 120
STATES = ("done", "failed", "running", "queued", "cancelled")


def fleet(redis_url: str, window: int, **settings: Any) -> Service:
    """A service whose tenants ``a`` and ``b`` own the skillbooks starting ``a-`` and ``b-``."""
    service = build_test_service(redis_url, admission_window=window, **settings)
    registry = TenantRegistry(service.runtime.redis, prefix=service.runtime.settings.queue_prefix)
    registry.add(Tenant("a", prefixes=("a-",)))
    registry.add(Tenant("b", prefixes=("b-",)))
    return service


@pytest.fixture
def service(redis_url: str, redis_client: redis.Redis) -> Iterator[Service]:
    built = fleet(redis_url, window=8)
    try:
        yield built
    finally:
        built.close()


def adds_up(status: BatchStatus) -> BatchStatus:
    """The status, after checking its five states add up to its size (not-yet-admitted is queued)."""
    counts = status.counts()
    assert sum(counts[state] for state in STATES) == status.total, counts
    return status


def finished(handle: BatchHandle) -> int:
    status = adds_up(handle.status())
    return status.done + status.failed


def test_a_small_tenant_finishes_while_a_big_import_of_another_is_far_from_done(service: Service) -> None:
    producer = service.producer
    big = producer.enqueue_traces(failure_traces(20_000, seed=1), "a-import")
    # Not sent: admitted as the window frees, so the queues hold a window's samples, not 20,000.
    assert service.runtime.batches.status(big.batch_id).enqueued == 8
    with local_workers(service, learn_threads=4):
        wait_for(lambda: finished(big) >= 20, TIMEOUT, "the big import to get going")
        small = producer.enqueue_traces(failure_traces(50, seed=2), "b-live")
        small_done = small.wait(timeout=TIMEOUT)
        big_then = adds_up(big.status())
        service.runtime.batches.cancel(big.batch_id)

    assert (small_done.done, small_done.failed, small_done.state) == (50, 0, BatchState.DONE)
    # Without admission the 50 would queue behind the 20,000: here most of the import still waits.
    assert big_then.done + big_then.failed < 2_000
    assert big_then.queued > 17_000
    assert big_then.state is BatchState.RUNNING


def test_weights_and_caps_shape_what_each_tenant_has_in_flight(
    redis_url: str, redis_client: redis.Redis
) -> None:
    built = fleet(redis_url, window=6)
    try:
        registry = TenantRegistry(built.runtime.redis, prefix=built.runtime.settings.queue_prefix)
        registry.update("a", lambda t: Tenant("a", prefixes=t.prefixes, max_in_flight=2))
        built.runtime.tenants.forget()
        a = built.producer.enqueue_traces(failure_traces(30, seed=3), "a-capped")
        b = built.producer.enqueue_traces(failure_traces(30, seed=4), "b-free")
        # No worker runs yet: what was sent is what admission granted.
        assert (a.status().enqueued, b.status().enqueued) == (2, 4)
        assert built.runtime.admission.in_flight() == {"a": 2, "b": 4}
        with local_workers(built, learn_threads=4):
            a_done, b_done = a.wait(timeout=TIMEOUT), b.wait(timeout=TIMEOUT)
        assert (a_done.done, b_done.done) == (30, 30)
        assert built.runtime.admission.batches() == []  # finished batches are dropped
    finally:
        built.close()


def test_epochs_start_in_turn_through_a_window_of_two(redis_url: str, redis_client: redis.Redis) -> None:
    built = fleet(redis_url, window=2)
    try:
        handle = built.producer.enqueue_traces(failure_traces(5, seed=5), "a-epochs", epochs=3)
        with local_workers(built, learn_threads=2):
            status = handle.wait(timeout=TIMEOUT)
        assert (status.done, status.failed, status.enqueued, status.epoch) == (15, 0, 15, 3)
        assert sorted(handle.runtime.batches.records(handle.batch_id)) == sorted(
            f"e{epoch}:{index}" for epoch in (1, 2, 3) for index in range(1, 6)
        )
    finally:
        built.close()


def test_the_reconciler_heals_slots_whose_finish_was_never_told_and_grants_never_sent(
    service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    told: list[int] = []

    def crashed_before_telling(dispatch: Any, batch_id: str, epoch: int, finished: int | None) -> None:
        told.append(epoch)  # a worker that died between the batch's finish script and admission's

    monkeypatch.setattr(finishing, "sample_left", crashed_before_telling)
    handle = service.producer.enqueue_traces(failure_traces(20, seed=6), "a-healed")
    with local_workers(service, learn_threads=4):
        wait_for(lambda: len(told) == 8, TIMEOUT, "the first window to finish")
        assert handle.status().enqueued == 8  # every slot held by a finish nobody told
        monkeypatch.undo()
        # A grant recorded whose sender died before sending: the window is all it could take.
        runtime = service.runtime
        grants = runtime.admission.admit(16, runtime.tenants.current().tenants)
        assert [(g.batch_id, g.admitted) for g in grants] == [(handle.batch_id, 16)]
        assert handle.status().enqueued == 8
        reconcile_running(service.dispatcher)  # the periodic tick
        status = handle.wait(timeout=TIMEOUT)
    assert (status.done, status.failed, status.enqueued) == (20, 0, 20)
    assert len(told) == 8


def test_a_cancelled_batch_gives_its_slots_back_on_the_next_tick(service: Service) -> None:
    runtime = service.runtime
    big = service.producer.enqueue_traces(failure_traces(500, seed=7), "a-dropped")
    runtime.batches.cancel(big.batch_id)  # its 8 admitted samples will never finish
    small = service.producer.enqueue_traces(failure_traces(5, seed=8), "b-after")
    assert small.status().enqueued == 0  # the window is held by the cancelled batch
    reconcile_running(service.dispatcher)
    assert runtime.admission.batches() == [small.batch_id]
    assert small.status().enqueued == 5
    with local_workers(service, learn_threads=2):
        assert small.wait(timeout=TIMEOUT).done == 5


def test_an_admit_message_naming_no_batch_is_dropped_and_one_for_a_gone_batch_sends_nothing(
    service: Service, caplog: pytest.LogCaptureFixture
) -> None:
    admit = service.app.tasks[ADMIT_TASK]
    # The module's own level: whatever an earlier test in this process left the root logger at.
    with caplog.at_level(logging.WARNING, logger="ace_workers.distributed.worker.tasks"):
        assert admit(batch_id=["not", "a", "batch"]) == 0
    assert "ace.admit names no batch" in caplog.text
    assert admit(batch_id="never-created") == 0


def test_finishing_samples_grant_a_chunk_at_once_and_one_hand_off_sends_it(service: Service) -> None:
    runtime, dispatch = service.runtime, service.dispatcher
    handle = service.producer.enqueue_traces(failure_traces(20, seed=9), "a-chunks")
    assert handle.status().enqueued == 8  # the window, sent by the producer
    routes = runtime.routes(handle.status().recipe)
    queue = runtime.queue(routes[0].queue_role, "a-chunks")

    def hand_offs() -> list[dict[str, Any]]:
        messages = [json.loads(raw) for raw in runtime.redis.lrange(queue, 0, -1)]
        return [m for m in messages if m["headers"]["task"] == ADMIT_TASK]

    def finish(index: int) -> None:
        done = runtime.batches.record_done(handle.batch_id, 1, index, {})
        finishing.start_next_epoch(dispatch, handle.batch_id, 1, done)

    chunk = grant_chunk(8)
    assert chunk == 4  # half the window
    for index in range(1, chunk):
        finish(index)
    assert (runtime.admission.admitted(handle.batch_id), hand_offs()) == (8, [])  # not yet a chunk free
    finish(chunk)
    assert runtime.admission.admitted(handle.batch_id) == 8 + chunk
    assert len(hand_offs()) == 1  # one message for the chunk, sent on by a worker of the first step
    assert handle.status().enqueued == 8  # not by the finishing (write) worker
    assert service.app.tasks[ADMIT_TASK](batch_id=handle.batch_id) == chunk
    assert service.app.tasks[ADMIT_TASK](batch_id=handle.batch_id) == 0  # told twice, sends nothing more
    assert handle.status().enqueued == 8 + chunk


def test_finishes_spread_over_two_worker_processes_go_untold_and_still_grant_every_chunk(
    service: Service, redis_url: str
) -> None:
    # A second process's own runtime and Redis client, on the same fleet (its queue prefix).
    prefix = service.runtime.settings.queue_prefix
    other = build_test_service(redis_url, admission_window=8, queue_prefix=prefix)
    try:
        handle = service.producer.enqueue_traces(failure_traces(20, seed=10), "a-spread")
        assert handle.status().enqueued == 8
        processes = (service.dispatcher, other.dispatcher)
        quiet, admitted = [], []
        for index in range(1, 9):
            dispatch = processes[index % 2]  # each process finishes every other sample
            finish = dispatch.runtime.batches.record_done(handle.batch_id, 1, index, {})
            assert finish is not None
            quiet.append(finish.quiet)
            finishing.start_next_epoch(dispatch, handle.batch_id, 1, finish)
            admitted.append(service.runtime.admission.admitted(handle.batch_id))
    finally:
        other.close()
    # Tenant a alone: only the finish that frees a chunk of 4 (and the one telling the count after
    # the producer's window) reaches admission, whichever process ran it.
    assert quiet == [False, True, True, False, True, True, True, False]
    # Each chunk granted by the finish that freed it, with no reconciler tick.
    assert admitted == [8, 8, 8, 12, 12, 12, 12, 16]


def finished_quiet(service: Service, batch_id: str, index: int) -> bool:
    """Finish sample ``index`` of the batch's first epoch as a worker does; whether it went untold."""
    done = service.runtime.batches.record_done(batch_id, 1, index, {})
    assert done is not None
    finishing.start_next_epoch(service.dispatcher, batch_id, 1, done)
    return done.quiet


def test_a_newcomer_tenant_gets_at_once_the_slots_a_lone_tenants_untold_finishes_freed(
    service: Service,
) -> None:
    runtime = service.runtime
    big = service.producer.enqueue_traces(failure_traces(20, seed=11), "a-alone")

    def finish(index: int) -> bool:
        return finished_quiet(service, big.batch_id, index)

    assert [finish(index) for index in (1, 2, 3)] == [False, True, True]  # two admission has not heard of
    small = service.producer.enqueue_traces(failure_traces(5, seed=12), "b-newcomer")
    assert small.status().enqueued == 3  # every free slot, the untold ones' with them
    # Two tenants with work: every finish of a is told, and the chunk it frees is shared fairly.
    assert [finish(index) for index in (4, 5, 6, 7)] == [False, False, False, False]
    assert runtime.admission.in_flight() == {"a": 4, "b": 4}


def test_a_batch_opened_behind_a_fully_admitted_one_gets_the_slots_its_untold_finishes_freed(
    service: Service,
) -> None:
    runtime = service.runtime
    first = service.producer.enqueue_traces(failure_traces(8, seed=13), "a-first")  # the whole window

    def finish(index: int) -> bool:
        return finished_quiet(service, first.batch_id, index)

    # Nothing waits for a slot: every finish but its last in flight goes untold.
    assert [finish(index) for index in range(1, 6)] == [False, True, True, True, True]
    second = service.producer.enqueue_traces(failure_traces(10, seed=14), "a-second")
    assert second.status().enqueued == 5  # its own tenant's batch, owed every slot as well
    assert runtime.admission.in_flight() == {"a": 8}


def test_a_sample_parked_for_budget_ends_the_untold_finishes_so_the_last_one_is_told(
    service: Service,
) -> None:
    runtime = service.runtime
    batch = service.producer.enqueue_traces(failure_traces(8, seed=15), "a-parks")  # the whole window

    def finish(index: int) -> bool:
        return finished_quiet(service, batch.batch_id, index)

    assert [finish(index) for index in range(1, 6)] == [False, True, True, True, True]
    for index in (6, 7):  # they wait for their tenant's budget: out of flight, unfinished
        admission.sample_parked(runtime, batch.batch_id, 1, index)
    assert runtime.admission.in_flight() == {"a": 1}  # the untold finishes counted as the first parked
    # The mark let finishes go untold up to the batch's last in flight as it was before the parks:
    # sample 8 is now the last, and is told.
    assert finish(8) is False
    assert runtime.admission.in_flight() == {"a": 0}
