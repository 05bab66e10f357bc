"""One truth per sample over real workers: fail, dead-letter, retry, re-drive and cancel keep the sum.

Every time status is read, while workers run, its five states add up to the batch's size;
a sample is never counted twice; failures and dead letters agree; a retried sample that
then runs moves from failed to done; a cancelled batch parks nothing.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from ace_workers.distributed import WorkerSettings
from ace_workers.distributed.producer.producer import BatchHandle
from ace_workers.distributed.service import Service, build_service, local_workers
from ace_workers.distributed.store.batches import BatchState, BatchStatus
from ace_workers.distributed.worker.chains import sample_chain
from ace_workers.distributed.worker.dead_letters import read_dead_letters, retry_dead_letters
from ace_workers.distributed.worker.reconcile import reconcile_batch
from tests.support.broker_state import steps_in_flight
from tests.support.recipes import CHOOSY_HEALED
from tests.support.recipes import choosy_traces as traces
from tests.support.waiting import wait_for
from tests.support.workers import build_test_service

TIMEOUT = 60
STATES = ("done", "failed", "running", "queued", "waiting_for_budget", "cancelled")
FAST_LEDGER = {
    "visibility_timeout_seconds": 1,
    "retry_backoff_seconds": 0.01,
    "task_max_retries": 0,
    "reconcile_interval_seconds": 0.2,
}


@pytest.fixture
def service(redis_url: str, redis_client: redis.Redis) -> Iterator[Service]:
    built = build_test_service(redis_url, **FAST_LEDGER)
    try:
        yield built
    finally:
        built.close()


def checked(handle: BatchHandle) -> BatchStatus:
    """The batch's status, after checking that its states add up to its size."""
    status = handle.status()
    counts = status.counts()
    assert sum(counts[state] for state in STATES) == status.total, counts
    assert all(counts[state] >= 0 for state in STATES), counts
    return status


def wait_checked(handle: BatchHandle, until: Any) -> BatchStatus:
    """Poll the status (checking every read) until ``until(status)``."""

    def reached() -> BatchStatus | None:
        status = checked(handle)
        return status if until(status) else None

    return wait_for(reached, TIMEOUT, "the batch", every=0.01)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_failures_retries_and_redrives_keep_one_truth_per_sample(
    service: Service, redis_url: str, redis_client: redis.Redis, seed: int
) -> None:
    rng = random.Random(seed)
    count = rng.randint(6, 10)
    failing = set(rng.sample(range(1, count + 1), rng.randint(1, 3)))
    lose_messages = rng.random() < 0.7
    handle = service.producer.enqueue_traces(traces(redis_url, count, failing), "book", recipe="choosy")
    assert checked(handle).queued == count
    if lose_messages:
        service.app.control.purge()  # every message lost: the reconciler sends each again
    with local_workers(service, learn_threads=2):
        if lose_messages:
            # The reconciler sends the samples again once they count as lost (no progress for
            # about the visibility timeout): ask it until it does.
            wait_for(
                lambda: reconcile_batch(service.dispatcher, handle.batch_id).redriven,
                FAST_LEDGER["visibility_timeout_seconds"] * 1.5 + TIMEOUT,
                "the reconciler to send the lost samples again",
                every=0.1,
            )
        first = wait_checked(handle, lambda s: s.state is BatchState.DONE_WITH_FAILURES)
        assert (first.done, first.failed) == (count - len(failing), len(failing))
        letters = read_dead_letters(service.runtime)
        assert sorted(letter.letter["kwargs"]["sample_index"] for letter in letters) == sorted(failing)

        redis_client.set(CHOOSY_HEALED, 1)
        report = retry_dead_letters(service.dispatcher)
        assert (report.sent, report.kept) == (len(failing), [])
        final = wait_checked(handle, lambda s: s.state is BatchState.DONE)

    assert final.counts() == {
        "done": count,
        "failed": 0,
        "running": 0,
        "queued": 0,
        "waiting_for_budget": 0,
        "cancelled": 0,
        "retried": len(failing),
    }
    records = service.runtime.batches.records(handle.batch_id)
    assert sorted(key for key, record in records.items() if record.get("retried")) == sorted(
        f"e1:{index}" for index in failing
    )
    assert read_dead_letters(service.runtime) == []
    assert handle.errors() == []


def test_a_cancelled_batch_counts_its_unfinished_samples_cancelled_and_parks_nothing(
    service: Service, redis_url: str
) -> None:
    count = 40
    handle = service.producer.enqueue_traces(traces(redis_url, count, set()), "book", recipe="choosy")
    with local_workers(service, learn_threads=2):
        wait_checked(handle, lambda s: s.done >= 3)
        service.runtime.batches.cancel(handle.batch_id)
        at_cancel = checked(handle)
        # Workers take the rest of the messages and skip them; a step that was running when the
        # batch was cancelled finishes (tasks are acknowledged after they ran).
        wait_for(lambda: steps_in_flight(service) == 0, TIMEOUT, "every message to be taken and acknowledged")
        final = checked(handle)

    assert final.state is BatchState.CANCELLED
    assert final.cancelled_samples > 0
    assert final.failed == 0
    assert final.done >= at_cancel.done
    assert final.done + final.cancelled_samples == count
    assert read_dead_letters(service.runtime) == []
    assert handle.errors() == []


def test_samples_that_fail_at_their_first_step_are_counted_failed(
    service: Service, redis_url: str, clean_env: pytest.MonkeyPatch
) -> None:
    # A producer configured with a recipe the workers are not: sent while no worker ran to say so.
    producer = build_service(
        WorkerSettings(
            redis_url=redis_url,
            queue_prefix=service.runtime.settings.queue_prefix,
            recipes="mine=tests.support.recipes:choosy_recipe",
        ),
        redis_url=redis_url,
    )
    try:
        handle = producer.producer.enqueue_traces(traces(redis_url, 4, set()), "book", recipe="mine")
    finally:
        producer.close()
    handle = BatchHandle(handle.batch_id, service.runtime, service.dispatcher)
    with local_workers(service, learn_threads=2):
        final = wait_checked(handle, lambda s: s.state is BatchState.FAILED)
    assert final.counts() == {
        "done": 0,
        "failed": 4,
        "running": 0,
        "queued": 0,
        "waiting_for_budget": 0,
        "cancelled": 0,
        "retried": 0,
    }
    assert len(read_dead_letters(service.runtime)) == 4
    assert all("unknown recipe 'mine'" in error["error"] for error in handle.errors())


def test_the_batch_gauges_read_the_same_ledger_as_status(service: Service, redis_url: str) -> None:
    handle = service.producer.enqueue_traces(traces(redis_url, 5, {2}), "book", recipe="choosy")
    registry = service.runtime.metrics.registry

    def gauges() -> dict[str, float]:
        return {
            state: registry.get_sample_value("ace_batch_samples", {"skillbook": "book", "state": state}) or 0
            for state in STATES
        }

    status = checked(handle)
    assert gauges() == {state: status.counts()[state] for state in STATES}
    assert registry.get_sample_value("ace_batch_samples_total_size", {"skillbook": "book"}) == 5
    with local_workers(service, learn_threads=2):
        status = wait_checked(handle, lambda s: s.state is BatchState.DONE_WITH_FAILURES)
    assert status.failed == 1
    # Finished, the batch leaves the running set (the reconciler's next look): its gauges go with it.
    reconcile_batch(service.dispatcher, handle.batch_id)
    assert gauges() == dict.fromkeys(STATES, 0)


def test_a_second_copy_of_a_failed_sample_parks_no_second_dead_letter(
    service: Service, redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    # The reconciler sends a stalled sample again while its first copy may still be in flight:
    # when both copies fail, the sample is one failure and one letter, not two.
    handle = service.producer.enqueue_traces(traces(redis_url, 3, {2}), "book", recipe="choosy")
    with local_workers(service, learn_threads=2), caplog.at_level(logging.INFO):
        wait_checked(handle, lambda s: s.state is BatchState.DONE_WITH_FAILURES)
        (letter,) = read_dead_letters(service.runtime)
        kwargs = letter.letter["kwargs"]
        chain = sample_chain(
            service.dispatcher,
            letter.letter["payload"],
            recipe=kwargs["recipe"],
            skillbook=kwargs["skillbook"],
            batch_id=kwargs["batch_id"],
            epoch=kwargs["epoch"],
            sample_index=kwargs["sample_index"],
            start=kwargs["index"],
        )
        service.dispatcher.send_chain(chain)
        wait_for(
            lambda: any("already finished; no second dead letter" in r.getMessage() for r in caplog.records),
            TIMEOUT,
            "the second copy to fail",
        )
    assert [letter.letter["kwargs"]["sample_index"] for letter in read_dead_letters(service.runtime)] == [2]
    assert checked(handle).counts()["failed"] == 1
