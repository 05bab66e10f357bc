"""A producer application needs only settings: Producer(settings) and Producer.from_env()."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from ace_workers.distributed import Producer, ProducerConfigError, WorkerSettings
from ace_workers.distributed.settings import env_name
from ace_workers.sim import failure_traces
from tests.support.workers import running_service


def test_a_producer_from_the_environment_sends_a_batch_the_workers_learn(
    redis_client: redis.Redis, redis_url: str
) -> None:
    with running_service(redis_url) as workers:
        settings = workers.runtime.settings
        environ = {
            env_name("redis_url"): redis_url,
            env_name("queue_prefix"): settings.queue_prefix,
            env_name("sim_trust_threshold"): "0",
        }
        with Producer.from_env(environ) as producer:
            assert producer.dispatcher.app is not workers.app  # its own app and connections, nothing borrowed
            handle = producer.enqueue_traces(failure_traces(10), "support")
            status = handle.wait(timeout=60)

        assert (status.done, status.failed, status.total) == (10, 0, 10)
        assert len(workers.runtime.store("support").export()) == 5


def test_a_producer_built_from_settings_follows_a_batch_after_the_workers_finish_it(
    redis_client: redis.Redis, redis_url: str
) -> None:
    with running_service(redis_url) as workers:
        producer = Producer(workers.runtime.settings)
        try:
            handle = producer.enqueue_traces(failure_traces(4), "support")
            handle.wait(timeout=60)
            results = handle.results()
        finally:
            producer.close()

    assert [r.ok for r in results] == [True] * 4


def test_a_producer_without_a_redis_url_names_the_setting() -> None:
    with pytest.raises(ProducerConfigError, match="ACE_REDIS_URL"):
        Producer(WorkerSettings())


def test_a_producer_given_a_dispatcher_leaves_its_connections_to_their_owner(redis_url: str) -> None:
    with running_service(redis_url) as workers:
        producer = Producer(workers.runtime.settings, dispatcher=workers.dispatcher)
        producer.close()
        status = workers.producer.enqueue_traces(failure_traces(2), "support").wait(timeout=60)

    assert producer.runtime is workers.runtime
    assert status.done == 2


def test_an_iterator_with_a_declared_count_runs_several_epochs_read_once(
    redis_client: redis.Redis, redis_url: str
) -> None:
    reads: list[int] = []

    def traces() -> Iterator[dict[str, str]]:
        for number, trace in enumerate(failure_traces(4), start=1):
            reads.append(number)
            yield trace

    with running_service(redis_url) as workers:
        handle = workers.producer.enqueue_traces(traces(), "support", epochs=3, count=4)
        status = handle.wait(timeout=60)
        results = handle.results()

    assert reads == [1, 2, 3, 4]  # read once; epochs 2 and 3 came from the batch's stored inputs
    assert (status.done, status.failed, status.total) == (12, 0, 12)
    assert [r.output.epoch for r in results if r.output is not None] == [1] * 4 + [2] * 4 + [3] * 4


def test_an_iterator_of_unknown_length_is_refused_more_than_one_epoch(redis_url: str) -> None:
    with running_service(redis_url) as workers, pytest.raises(ValueError, match="declared count"):
        workers.producer.enqueue_traces(iter(failure_traces(2)), "support", epochs=2)
