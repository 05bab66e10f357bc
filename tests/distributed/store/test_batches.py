"""Batch records in the real Redis: queued, running and finished counts, each sample counted once."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
import redis

from ace_workers.core.context import ACEStepContext
from ace_workers.distributed.service import Service, build_service, local_workers
from ace_workers.distributed.settings import WorkerSettings
from ace_workers.distributed.store.batches import BatchStore, SampleFinish
from ace_workers.distributed.store.errors import BatchNotFoundError
from ace_workers.distributed.store.keys import batch_key
from ace_workers.distributed.worker.chains import enqueue_epoch
from ace_workers.distributed.worker.epochs import epoch_payload
from ace_workers.distributed.worker.finishing import start_next_epoch
from ace_workers.distributed.worker.payload import context_to_payload
from ace_workers.sim import failure_traces


@pytest.fixture
def service(redis_client: redis.Redis, redis_url: str) -> Iterator[Service]:
    """An app, runtime and producer with a queue prefix of their own; no workers until a test starts them."""
    built = build_service(
        WorkerSettings(redis_url=redis_url, queue_prefix=f"t{uuid.uuid4().hex[:8]}"), redis_url=redis_url
    )
    try:
        yield built
    finally:
        built.app.control.purge()
        built.close()


def test_queued_running_and_finished_add_up(redis_client: redis.Redis) -> None:
    batches = BatchStore(redis_client, prefix="tb", ttl_seconds=3600)
    batches.create("b1", skillbook="book", recipe="trace_analyser", per_epoch=4, epochs=1, skills_at_start=0)
    for index in range(1, 5):
        batches.record_sent("b1", 1, index)
    batches.record_progress("b1", 1, 1, first_step=True)
    batches.record_progress("b1", 1, 1, first_step=True)  # a redelivered first step starts nothing new
    batches.record_progress("b1", 1, 2, first_step=True)
    batches.record_done("b1", 1, 1, {"trace": {}})
    status = batches.status("b1")
    assert (status.queued, status.running, status.done, status.failed) == (2, 1, 1, 0)
    assert status.in_flight == status.queued + status.running


def test_a_batch_whose_record_vanished_is_a_lookup_error(redis_client: redis.Redis) -> None:
    batches = BatchStore(redis_client, prefix="tb", ttl_seconds=3600)
    # A late counter increment after the record expired recreates the hash with that field only.
    redis_client.hincrby(batch_key("tb", "gone"), "done", 1)
    with pytest.raises(LookupError, match="no batch 'gone'"):
        batches.status("gone")


def test_statuses_keep_the_order_read_each_batch_once_and_leave_out_one_expired(
    redis_client: redis.Redis,
) -> None:
    batches = BatchStore(redis_client, prefix="tb", ttl_seconds=3600)
    for batch_id in ("b1", "b2"):
        batches.create(
            batch_id, skillbook="book", recipe="trace_analyser", per_epoch=1, epochs=1, skills_at_start=0
        )
    redis_client.hincrby(batch_key("tb", "gone"), "done", 1)  # a record expired but for a late counter
    listed = batches.statuses(["b2", "gone", "b1", "b2", "never"])
    assert [status.batch_id for status in listed] == ["b2", "b1"]


def test_a_batch_without_workers_is_all_queued_then_all_finished(service: Service) -> None:
    handle = service.producer.enqueue_traces(failure_traces(6), "book", epochs=2)
    waiting = handle.status()
    # Epoch 1's six sent and epoch 2's six to come are all queued: the states add up to the size.
    assert (waiting.enqueued, waiting.queued, waiting.running) == (6, 12, 0)
    with local_workers(service, learn_threads=2):
        status = handle.wait(timeout=60)
    assert (status.done, status.started, status.queued, status.running) == (12, 12, 0, 0)


def test_a_sample_recorded_again_is_counted_once_and_says_so(redis_client: redis.Redis) -> None:
    batches = BatchStore(redis_client, prefix="tb", ttl_seconds=3600)
    batches.create("b1", skillbook="book", recipe="trace_analyser", per_epoch=2, epochs=1, skills_at_start=0)
    assert batches.record_done("b1", 1, 1, {"trace": {}}) == SampleFinish(1, quiet=False)
    assert batches.record_done("b1", 1, 1, {"trace": {}}) is None
    assert batches.record_failure("b1", 1, 1, step="ApplyStep", error="late") is None
    assert batches.record_failure("b1", 1, 2, step="ApplyStep", error="boom") == SampleFinish(2, quiet=False)
    status = batches.status("b1")
    assert (status.done, status.failed, batches.finished_in_epoch("b1", 1)) == (1, 1, 2)
    assert batches.records("b1")["e1:1"]["outcome"] == "done"


def test_a_redelivered_final_task_sends_the_rest_of_an_epoch_a_dead_worker_half_sent(
    service: Service,
) -> None:
    runtime = service.runtime
    handle = service.producer.enqueue_traces(failure_traces(4), "book", epochs=2)
    batch_id = handle.batch_id
    # Epoch 1 ran: its samples are counted, but the worker that counted the last one died
    # after sending two of epoch 2's four samples.
    service.app.control.purge()
    for index in range(1, 5):
        runtime.batches.record_done(batch_id, 1, index, {"trace": {}})
    payloads = [
        epoch_payload(runtime, item, epoch=2, epochs=2, index=index, total=4)
        for index, item in enumerate(runtime.batches.items(batch_id), start=1)
    ]
    enqueue_epoch(
        service.dispatcher,
        payloads[:2],
        recipe="trace_analyser",
        skillbook="book",
        batch_id=batch_id,
        epoch=2,
    )
    # Its task comes back (acks_late): counted already, it finishes sending epoch 2.
    start_next_epoch(service.dispatcher, batch_id, 1, runtime.batches.record_done(batch_id, 1, 4, {}))
    start_next_epoch(service.dispatcher, batch_id, 1, None)  # and a third delivery sends nothing more
    assert runtime.batches.status(batch_id).enqueued == 8
    with local_workers(service, learn_threads=2):
        status = handle.wait(timeout=60)
    assert (status.done, status.failed, status.enqueued) == (8, 0, 8)
    assert sorted(k for k in runtime.batches.records(batch_id) if k.startswith("e2:")) == [
        "e2:1",
        "e2:2",
        "e2:3",
        "e2:4",
    ]


def test_an_epoch_being_sent_by_another_task_is_not_sent_again(service: Service) -> None:
    runtime = service.runtime
    handle = service.producer.enqueue_traces(failure_traces(2), "book", epochs=2)
    for index in (1, 2):
        runtime.batches.record_done(handle.batch_id, 1, index, {"trace": {}})
    with runtime.batches.epoch_start_lock(handle.batch_id, 2, 30) as held:
        assert held
        start_next_epoch(service.dispatcher, handle.batch_id, 1, None)
        assert runtime.batches.status(handle.batch_id).enqueued == 2
    start_next_epoch(service.dispatcher, handle.batch_id, 1, None)
    assert runtime.batches.status(handle.batch_id).enqueued == 4


def test_each_app_in_a_process_sends_its_own_next_epochs(redis_client: redis.Redis, redis_url: str) -> None:
    # Two services in one process, registered one after the other: a batch's second epoch
    # must go out through the app its tasks run on, to its own queues, not the last registered.
    first = build_service(WorkerSettings(redis_url=redis_url, queue_prefix="appone"), redis_url=redis_url)
    second = build_service(WorkerSettings(redis_url=redis_url, queue_prefix="apptwo"), redis_url=redis_url)
    try:
        for service in (first, second):
            with local_workers(service, learn_threads=2):
                status = service.producer.enqueue_traces(failure_traces(3), "book", epochs=2).wait(timeout=60)
            assert (status.done, status.failed) == (6, 0)
    finally:
        first.close()
        second.close()


def test_a_batch_ended_at_an_epoch_that_already_finished_is_done_and_expires(
    redis_client: redis.Redis,
) -> None:
    batches = BatchStore(redis_client, prefix="tb", ttl_seconds=3600)
    batches.create("b1", skillbook="book", recipe="trace_analyser", per_epoch=2, epochs=3, skills_at_start=0)
    for index in (1, 2):
        batches.record_done("b1", 1, index, {"trace": {}})
    assert batches.status("b1").total == 6  # epochs 2 and 3 never started
    batches.end_at_epoch("b1", 1)
    status = batches.status("b1")
    assert (status.state.value, status.total, status.epochs) == ("done", 2, 1)
    # No sample is left to finish it: ending it finishes it, so its records expire.
    assert 0 < redis_client.ttl(batch_key("tb", "b1")) <= 3600
    assert status.elapsed_seconds == batches.status("b1").elapsed_seconds  # its clock stopped


def test_resume_sends_the_next_epoch_of_a_batch_whose_current_epoch_finished(service: Service) -> None:
    runtime = service.runtime
    handle = service.producer.enqueue_traces(failure_traces(4), "book", epochs=2)
    # Epoch 1 finished, but the worker that finished it died before sending epoch 2.
    for index in range(1, 5):
        runtime.batches.record_done(handle.batch_id, 1, index, {"trace": {}})
    assert service.producer.resume(handle.batch_id) == 4
    assert runtime.batches.status(handle.batch_id).enqueued == 8
    assert service.producer.resume(handle.batch_id) == 0  # nothing left to send


def test_resume_sends_the_rest_of_a_half_sent_epoch_from_where_it_stopped(service: Service) -> None:
    batches = service.runtime.batches
    batches.create(
        "half", skillbook="book", recipe="trace_analyser", per_epoch=5, epochs=1, skills_at_start=0
    )
    items = [
        context_to_payload(ACEStepContext(trace=trace), claims=service.runtime.claims)
        for trace in failure_traces(5)
    ]
    batches.store_items("half", items)
    for index in (1, 2):
        batches.record_sent("half", 1, index)
    assert service.producer.resume("half") == 3
    assert batches.status("half").enqueued == 5


def test_progress_for_a_batch_with_no_record_is_a_lookup_error_and_writes_nothing(
    redis_client: redis.Redis,
) -> None:
    batches = BatchStore(redis_client, prefix="tb", ttl_seconds=3600)
    with pytest.raises(BatchNotFoundError, match="no batch 'gone'"):
        batches.record_progress("gone", 1, 1, first_step=True)
    assert list(redis_client.scan_iter(match="tb:{batch:gone}*")) == []


def test_a_failure_for_a_batch_with_no_record_is_a_lookup_error_and_writes_nothing(
    redis_client: redis.Redis,
) -> None:
    batches = BatchStore(redis_client, prefix="tb", ttl_seconds=3600)
    with pytest.raises(BatchNotFoundError, match="no batch 'gone'"):
        batches.record_failure("gone", 1, 1, step="ReflectStep", error="boom")
    assert list(redis_client.scan_iter(match="tb:{batch:gone}*")) == []


def test_a_bare_hash_left_by_a_late_counter_is_no_batch(redis_client: redis.Redis) -> None:
    batches = BatchStore(redis_client, prefix="tb", ttl_seconds=3600)
    redis_client.hset(batch_key("tb", "gone"), "progress_at", 1.0)
    assert not batches.exists("gone")


def test_progress_for_a_cancelled_batch_says_so_and_makes_no_key(redis_client: redis.Redis) -> None:
    batches = BatchStore(redis_client, prefix="tb", ttl_seconds=3600)
    batches.create("b1", skillbook="book", recipe="trace_analyser", per_epoch=1, epochs=1, skills_at_start=0)
    batches.cancel("b1")
    assert batches.record_progress("b1", 1, 1, first_step=True) is False
    assert redis_client.exists(batch_key("tb", "b1", "started")) == 0
