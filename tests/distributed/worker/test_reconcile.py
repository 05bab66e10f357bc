"""The batch ledger re-drives lost samples: a message the broker lost is sent again, and applied once."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest
import redis

from ace_workers.distributed import WorkerSettings
from ace_workers.distributed.producer.producer import BatchHandle
from ace_workers.distributed.service import Service, build_service, local_workers
from ace_workers.distributed.store.batches import BatchState
from ace_workers.distributed.store.keys import batch_key, running_batches_key
from ace_workers.distributed.worker.dead_letters import read_dead_letters, retry_dead_letters
from ace_workers.distributed.worker.reconcile import (
    RECONCILE_TASK,
    RECONCILER,
    lost_after_seconds,
    reconcile_batch,
    reconcile_running,
    reconcile_schedule,
)
from ace_workers.sim import failure_traces
from tests.support.recipes import TEST_RECIPES
from tests.support.waiting import wait_for

TIMEOUT = 60
# A sample counts as lost after ~1 s without progress: the visibility timeout plus the retry backoff.
FAST_LEDGER = {
    "visibility_timeout_seconds": 1,
    "retry_backoff_seconds": 0.01,
    "task_max_retries": 1,
    "reconcile_interval_seconds": 0.2,
    "max_redrives": 2,
}


@pytest.fixture
def service(redis_url: str, redis_client: redis.Redis) -> Iterator[Service]:
    """The app, runtime and producer of a fleet whose workers are not started yet."""
    settings = WorkerSettings(
        redis_url=redis_url,
        queue_prefix=f"t{uuid.uuid4().hex[:8]}",
        sim_trust_threshold=0,
        recipes=TEST_RECIPES,
        **FAST_LEDGER,
    )
    built = build_service(settings, redis_url=redis_url)
    try:
        yield built
    finally:
        built.close()


def learn_queue(service: Service) -> str:
    """The broker's list of the learn queue (kombu's Redis transport keeps a queue in a list of its name)."""
    return service.runtime.queue("learn")


def lose_one_message(client: redis.Redis, queue: str) -> None:
    """Delete a message from the broker, as a transport that lost it in flight would."""
    assert client.rpop(queue) is not None, f"no message on {queue} to lose"


def distinct_skills(service: Service, skillbook: str) -> list[str]:
    contents = [skill.content for skill in service.runtime.skillbook(skillbook).view().skills()]
    assert len(contents) == len(set(contents)), f"duplicate skills: {contents}"
    return contents


def test_a_message_lost_by_the_broker_is_sent_again_by_a_waiting_producer_and_applied_once(
    service: Service, redis_client: redis.Redis
) -> None:
    reference = build_reference_skills(service)
    handle = service.producer.enqueue_traces(failure_traces(6, topics=3), "lost")
    lose_one_message(redis_client, learn_queue(service))

    with local_workers(service):
        status = handle.wait(timeout=TIMEOUT)

    assert (status.done, status.failed) == (6, 0)
    redrives = service.runtime.batches.redrives(handle.batch_id)
    assert list(redrives.values()) == [1]
    assert sorted(distinct_skills(service, "lost")) == reference


def build_reference_skills(service: Service) -> list[str]:
    """The skills the same traces teach when nothing is lost (learned into another skillbook)."""
    handle = service.producer.enqueue_traces(failure_traces(6, topics=3), "reference")
    with local_workers(service):
        handle.wait(timeout=TIMEOUT)
    return sorted(distinct_skills(service, "reference"))


def test_beats_reconcile_task_sends_a_lost_sample_again(service: Service, redis_client: redis.Redis) -> None:
    sent = service.producer.enqueue_traces(failure_traces(4, topics=2), "beat")
    lose_one_message(redis_client, learn_queue(service))
    handle = BatchHandle(sent.batch_id, service.runtime)  # no app: this handle never reconciles

    with local_workers(service):
        # What beat sends every ACE_RECONCILE_INTERVAL_SECONDS, on the queue its entry names.
        entry = reconcile_schedule(service.runtime.settings)["reconcile"]

        def done_as_beat_reconciles() -> bool:
            if handle.status().state is BatchState.DONE:
                return True
            service.app.send_task(entry["task"], queue=entry["options"]["queue"])
            return False

        wait_for(done_as_beat_reconciles, TIMEOUT, "the batch to be done", every=0.5, detail=handle.status)

    assert entry["task"] == RECONCILE_TASK
    assert (handle.status().done, handle.status().failed) == (4, 0)
    assert list(service.runtime.batches.redrives(sent.batch_id).values()) == [1]


def test_nothing_is_sent_again_while_the_batch_progresses(service: Service) -> None:
    handle = service.producer.enqueue_traces(failure_traces(3), "moving")
    # Just under the limit since the batch's last progress (its last sample counted as sent).
    almost = time.time() + lost_after_seconds(service.runtime.settings) - 0.5

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(service.app, "connection_for_read", _no_broker_needed)
        report = reconcile_batch(service.dispatcher, handle.batch_id, now=almost)

    assert report.redriven == []


def _no_broker_needed() -> None:
    raise AssertionError("a batch that still progresses must not make the reconciler ask the broker")


def test_nothing_is_sent_again_while_the_recipes_queues_hold_messages(service: Service) -> None:
    handle = service.producer.enqueue_traces(failure_traces(3), "queued")
    later = time.time() + 10 * lost_after_seconds(service.runtime.settings)

    report = reconcile_batch(service.dispatcher, handle.batch_id, now=later)

    assert report.redriven == []
    assert service.runtime.batches.redrives(handle.batch_id) == {}


def test_a_sample_lost_every_time_fails_after_its_redrives_and_its_letter_can_be_retried(
    service: Service, redis_client: redis.Redis
) -> None:
    handle = service.producer.enqueue_traces(failure_traces(1), "unlucky")
    queue = learn_queue(service)
    max_redrives = service.runtime.settings.max_redrives
    for attempt in range(1, max_redrives + 1):
        lose_one_message(redis_client, queue)
        later = time.time() + 10 * lost_after_seconds(service.runtime.settings)
        report = reconcile_batch(service.dispatcher, handle.batch_id, now=later)
        assert report.redriven == [f"{handle.batch_id}:e1:1"], attempt
    lose_one_message(redis_client, queue)
    later = time.time() + 10 * lost_after_seconds(service.runtime.settings)
    report = reconcile_batch(service.dispatcher, handle.batch_id, now=later)

    assert report.given_up == [f"{handle.batch_id}:e1:1"]
    status = handle.status()
    assert (status.state, status.done, status.failed) == (BatchState.FAILED, 0, 1)
    assert handle.errors()[0]["step"] == RECONCILER
    assert "no progress after 2 re-sends" in handle.errors()[0]["error"]
    letters = read_dead_letters(service.runtime)
    assert [letter.step for letter in letters] == [RECONCILER]
    assert letters[0].problem is None  # a letter the operator can send back as it is
    assert retry_dead_letters(service.dispatcher).sent == 1
    assert redis_client.llen(queue) == 1


def test_a_running_batch_never_expires_and_a_finished_one_does(
    service: Service, redis_client: redis.Redis
) -> None:
    handle = service.producer.enqueue_traces(failure_traces(3), "ttl")
    prefix = service.runtime.settings.queue_prefix
    running_keys = [batch_key(prefix, handle.batch_id), batch_key(prefix, handle.batch_id, "items")]
    assert [redis_client.ttl(key) for key in running_keys] == [-1, -1]
    assert redis_client.sismember(running_batches_key(prefix), handle.batch_id)

    with local_workers(service):
        handle.wait(timeout=TIMEOUT)
    finished_keys = [*running_keys, batch_key(prefix, handle.batch_id, "records")]
    ttl = service.runtime.settings.result_ttl_seconds

    assert all(0 < redis_client.ttl(key) <= ttl for key in finished_keys), [
        redis_client.ttl(k) for k in finished_keys
    ]
    assert redis_client.exists(batch_key(prefix, handle.batch_id, "progress")) == 0  # every sample left it
    reconcile_running(service.dispatcher)
    assert not redis_client.sismember(running_batches_key(prefix), handle.batch_id)


def test_a_finished_batchs_elapsed_time_stops_growing(service: Service) -> None:
    handle = service.producer.enqueue_traces(failure_traces(2), "clock")
    with local_workers(service):
        first = handle.wait(timeout=TIMEOUT).elapsed_seconds
    time.sleep(0.3)  # the behaviour under test: time passes, and the elapsed time does not
    assert handle.status().elapsed_seconds == first
