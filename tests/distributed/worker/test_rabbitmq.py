"""RabbitMQ as the broker (Redis stays the store and the ledger), against a private RabbitMQ node."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from urllib.parse import urlsplit

import pytest
import redis

from ace_workers.distributed import WorkerSettings
from ace_workers.distributed.errors import InvalidSettingError
from ace_workers.distributed.service import Service, local_workers
from ace_workers.sim import failure_traces
from tests.support.workers import build_test_service

TIMEOUT = 90


def service_on(rabbitmq_url: str, redis_url: str, **settings: object) -> Service:
    """A service with RabbitMQ as its broker and the test Redis as its store."""
    return build_test_service(redis_url, broker_url=rabbitmq_url, **settings)


@pytest.fixture
def service(rabbitmq_url: str, redis_url: str, redis_client: redis.Redis) -> Iterator[Service]:
    built = service_on(rabbitmq_url, redis_url)
    try:
        yield built
    finally:
        built.close()


def test_a_batch_learns_through_rabbitmq_with_redis_as_the_store(service: Service) -> None:
    assert service.app.conf.broker_url.startswith("amqp://")
    handle = service.producer.enqueue_traces(failure_traces(6, topics=3), "book")
    with local_workers(service):
        status = handle.wait(timeout=TIMEOUT)
    assert (status.done, status.failed) == (6, 0)
    assert len(service.runtime.skillbook("book").view().skills()) == 3


@pytest.mark.parametrize("partitions", [1, 2])
def test_the_queues_are_quorum_queues_and_each_write_queue_has_a_single_active_consumer(
    rabbitmq_url: str,
    redis_url: str,
    redis_client: redis.Redis,
    partitions: int,
    rabbitmqctl: Callable[..., str],
) -> None:
    service = service_on(rabbitmq_url, redis_url, write_partitions=partitions)
    try:
        handle = service.producer.enqueue_traces(failure_traces(2), "book")  # declares the queues
        with local_workers(service):
            assert handle.wait(timeout=TIMEOUT).done == 2
    finally:
        service.close()
    vhost = urlsplit(rabbitmq_url).path[1:] or "/"  # "amqp://host//" names the vhost "/"
    listed = rabbitmqctl("list_queues", "-p", vhost, "--no-table-headers", "name", "type", "arguments")
    rows = {line.split("\t")[0]: line for line in listed.splitlines() if line.strip()}
    settings = service.runtime.settings
    writes = settings.write_queues()
    assert len(writes) == partitions
    for name in settings.all_queues():
        assert "\tquorum\t" in rows[name], rows[name]
        assert ("x-single-active-consumer" in rows[name]) is (name in writes), rows[name]


def test_retries_with_a_countdown_come_back_through_rabbitmq(
    rabbitmq_url: str, redis_url: str, redis_client: redis.Redis
) -> None:
    built = service_on(
        rabbitmq_url,
        redis_url,
        sim_failure_rate=0.4,
        sim_failure="rate_limit",
        task_max_retries=12,
        retry_backoff_seconds=0.05,
    )
    try:
        handle = built.producer.enqueue_traces(failure_traces(4), "book")
        with local_workers(built):
            status = handle.wait(timeout=TIMEOUT)
        registry = built.runtime.metrics.registry
        retries = sum(
            sample.value
            for metric in registry.collect()
            for sample in metric.samples
            if sample.name == "ace_step_retries_total"
        )
    finally:
        built.close()
    assert (status.done, status.failed) == (4, 0)
    assert retries > 0


def test_messages_purged_from_rabbitmq_are_sent_again_by_the_reconciler(
    rabbitmq_url: str, redis_url: str, redis_client: redis.Redis
) -> None:
    built = service_on(
        rabbitmq_url,
        redis_url,
        visibility_timeout_seconds=1,
        retry_backoff_seconds=0.01,
        task_max_retries=1,
        reconcile_interval_seconds=0.2,
    )
    try:
        handle = built.producer.enqueue_traces(failure_traces(3), "book")
        with built.app.connection_for_write() as connection:
            lost = connection.default_channel.queue_purge(built.runtime.queue("learn"))
        with local_workers(built):
            status = handle.wait(timeout=TIMEOUT)
        redrives = built.runtime.batches.redrives(handle.batch_id)
    finally:
        built.close()
    assert lost == 3
    assert (status.done, status.failed) == (3, 0)
    assert sorted(redrives.values()) == [1, 1, 1]


def test_a_broker_url_of_another_kind_is_refused_and_never_shown() -> None:
    with pytest.raises(InvalidSettingError, match="unsupported scheme 'kafka'"):
        WorkerSettings(broker_url="kafka://host:9092")
    assert "secret" not in repr(WorkerSettings(broker_url="amqp://guest:secret@host:5672/v"))
    assert "secret" not in repr(WorkerSettings(redis_url="redis://:secret@host:6379/0"))
