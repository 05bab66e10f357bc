"""Step retries back off exponentially with jitter, within known bounds."""

from __future__ import annotations

import random

import pytest

from ace_workers.distributed.settings import WorkerSettings
from ace_workers.distributed.worker.reconcile import lost_after_seconds
from ace_workers.distributed.worker.retries import (
    JITTER,
    broker_countdown,
    retry_countdown,
    total_backoff_bound,
)


def test_each_wait_stays_within_the_jitter_of_its_exponential_step() -> None:
    rng = random.Random(1)
    for retries in range(5):
        step = 2.0 * 2**retries
        waits = [retry_countdown(retries, 2.0, rng) for _ in range(200)]
        assert min(waits) >= step * (1 - JITTER)
        assert max(waits) < step * (1 + JITTER)


def test_a_wait_counted_without_end_stays_a_finite_number() -> None:
    # A step waiting out a full Redis counts its waits for hours: 2.0**1024 would overflow.
    wait = retry_countdown(5_000, 0.1, random.Random(4))
    assert wait == pytest.approx(0.1 * 2.0**64, rel=JITTER)


def test_samples_retrying_together_do_not_wait_alike() -> None:
    rng = random.Random(2)
    waits = {round(retry_countdown(1, 2.0, rng), 6) for _ in range(20)}
    assert len(waits) == 20


def test_the_mean_wait_is_the_exponential_step() -> None:
    rng = random.Random(3)
    waits = [retry_countdown(2, 1.0, rng) for _ in range(4000)]
    assert abs(sum(waits) / len(waits) - 4.0) < 0.1


def test_the_bound_covers_the_longest_waits_of_every_retry() -> None:
    longest = sum(2.0 * 2**retries * (1 + JITTER) for retries in range(3))
    assert total_backoff_bound(3, 2.0) == pytest.approx(longest)


def test_on_rabbitmq_the_bound_counts_each_wait_rounded_up_to_whole_seconds_from_one() -> None:
    # 0.01 s doubling: the longest waits are 0.015, 0.03, 0.06 s; RabbitMQ waits 1 s for each.
    assert total_backoff_bound(3, 0.01, amqp=True) == 3.0
    assert total_backoff_bound(3, 0.01) == pytest.approx(0.105)
    # 2 s doubling: 3, 6, 12 s already whole.
    assert total_backoff_bound(3, 2.0, amqp=True) == 21.0


def test_the_time_a_sample_counts_as_lost_after_follows_the_broker() -> None:
    redis_broker = WorkerSettings(
        visibility_timeout_seconds=10, retry_backoff_seconds=0.01, task_max_retries=3
    )
    rabbitmq = WorkerSettings(
        visibility_timeout_seconds=10,
        retry_backoff_seconds=0.01,
        task_max_retries=3,
        broker_url="amqp://guest:guest@127.0.0.1:5672/v",
    )
    assert lost_after_seconds(redis_broker) == pytest.approx(10.105)
    assert lost_after_seconds(rabbitmq) == 13.0


def test_a_rabbitmq_countdown_is_whole_seconds_from_one_and_a_redis_one_is_as_drawn() -> None:
    assert [broker_countdown(seconds, amqp=True) for seconds in (0.004, 0.9, 1.0, 2.1)] == [
        1.0,
        1.0,
        1.0,
        3.0,
    ]
    assert broker_countdown(0.004, amqp=False) == 0.004
