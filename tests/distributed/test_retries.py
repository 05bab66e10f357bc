"""Step retries back off exponentially with jitter, within known bounds."""

from __future__ import annotations

import random

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
    assert total_backoff_bound(3, 2.0) == longest


def test_a_rabbitmq_countdown_is_whole_seconds_from_one_and_a_redis_one_is_as_drawn() -> None:
    assert [broker_countdown(seconds, amqp=True) for seconds in (0.004, 0.9, 1.0, 2.1)] == [
        1.0,
        1.0,
        1.0,
        3.0,
    ]
    assert broker_countdown(0.004, amqp=False) == 0.004
