"""Telling a Redis that is out of memory from other errors: the refusals a step waits out, not fails on."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from ace_workers.distributed.worker.redis_health import is_redis_full, refuses_writes
from ace_workers.sim import failure_traces
from tests.support.workers import build_test_service


@pytest.fixture
def full_redis(redis_client: redis.Redis) -> Iterator[redis.Redis]:
    """The test Redis with a maxmemory below what it holds: every write that needs memory is refused."""
    redis_client.config_set("maxmemory", 1)
    try:
        yield redis_client
    finally:
        redis_client.config_set("maxmemory", 0)


def refusal(call: object) -> BaseException:
    with pytest.raises(redis.ResponseError) as raised:
        call()  # type: ignore[operator]
    return raised.value


def test_a_write_refused_for_want_of_memory_is_redis_full(full_redis: redis.Redis) -> None:
    assert is_redis_full(refusal(lambda: full_redis.set("k", "v")))


def test_a_transaction_refused_for_want_of_memory_is_redis_full(full_redis: redis.Redis) -> None:
    # Redis refuses every command queued in a MULTI while full, reads too.
    assert is_redis_full(refusal(lambda: full_redis.pipeline().get("k").execute()))


def test_another_error_reply_is_not_redis_full(redis_client: redis.Redis) -> None:
    redis_client.set("k", "v")
    assert not is_redis_full(refusal(lambda: redis_client.lpush("k", "x")))


def test_a_full_redis_refuses_the_probing_write(full_redis: redis.Redis) -> None:
    assert refuses_writes(full_redis, prefix="t")


def test_a_redis_with_room_takes_the_probing_write(redis_client: redis.Redis) -> None:
    assert not refuses_writes(redis_client, prefix="t")


def test_a_waiting_producer_waits_on_through_a_full_redis(redis_client: redis.Redis, redis_url: str) -> None:
    service = build_test_service(redis_url)  # no workers: the batch stays unfinished
    try:
        handle = service.producer.enqueue_traces(failure_traces(2), "book")
        redis_client.config_set("maxmemory", 1)
        try:
            with pytest.raises(TimeoutError):  # not the refusal: the wait goes on to its timeout
                handle.wait(timeout=0.3)
        finally:
            redis_client.config_set("maxmemory", 0)
    finally:
        service.close()
