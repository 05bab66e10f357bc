"""No poison message: whatever a step raises, its message is acknowledged once and the worker moves on.

Real private Redis, in-process workers of one learn thread: a message left unacknowledged
would hold that one slot, and the next batch would never run.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from ace_workers.distributed.service import Service
from ace_workers.distributed.worker.dead_letters import read_dead_letters
from ace_workers.sim import failure_traces
from tests.support.recipes import RAISED_BY_STEPS
from tests.support.waiting import wait_for
from tests.support.workers import running_service

# Where kombu's Redis transport keeps the messages delivered and not yet acknowledged.
KOMBU_UNACKED = "unacked"
TIMEOUT = 30


@pytest.fixture
def service(redis_client: redis.Redis, redis_url: str) -> Iterator[Service]:
    # A visibility timeout of 1 s: a message left unacknowledged comes back within about 2 s.
    with running_service(redis_url, learn_threads=1, visibility_timeout_seconds=1) as built:
        yield built


def all_acknowledged(client: redis.Redis, service: Service) -> bool:
    """Nothing delivered and unacknowledged, nothing waiting in the learn queue."""
    return client.hlen(KOMBU_UNACKED) == 0 and client.llen(service.runtime.queue("learn")) == 0


@pytest.mark.parametrize("error", sorted(RAISED_BY_STEPS))
def test_a_step_raising_a_base_exception_fails_its_sample_once(service: Service, error: str) -> None:
    handle = service.producer.enqueue_traces(failure_traces(1), "book", recipe=f"raises_{error}")
    status = handle.wait(timeout=TIMEOUT)
    assert (status.done, status.failed) == (0, 1)


@pytest.mark.parametrize("error", sorted(RAISED_BY_STEPS))
def test_a_step_raising_a_base_exception_has_its_message_acknowledged(
    service: Service, redis_client: redis.Redis, error: str
) -> None:
    service.producer.enqueue_traces(failure_traces(1), "book", recipe=f"raises_{error}").wait(timeout=TIMEOUT)
    wait_for(lambda: all_acknowledged(redis_client, service), TIMEOUT, "the failed step's acknowledgement")


@pytest.mark.parametrize("error", sorted(RAISED_BY_STEPS))
def test_a_step_raising_a_base_exception_is_dead_lettered_once(
    service: Service, redis_client: redis.Redis, error: str
) -> None:
    service.producer.enqueue_traces(failure_traces(1), "book", recipe=f"raises_{error}").wait(timeout=TIMEOUT)
    # Acknowledged, the message can never come back to be parked again.
    wait_for(lambda: all_acknowledged(redis_client, service), TIMEOUT, "the failed step's acknowledgement")
    letters = read_dead_letters(service.runtime)
    assert [letter.letter["error"] for letter in letters if letter.letter] == [
        f"{error}: {error} raised by a step on purpose"
    ]


@pytest.mark.parametrize("error", sorted(RAISED_BY_STEPS))
def test_the_worker_takes_the_next_task_after_a_step_raised_a_base_exception(
    service: Service, error: str
) -> None:
    service.producer.enqueue_traces(failure_traces(1), "book", recipe=f"raises_{error}")
    status = service.producer.enqueue_traces(failure_traces(3), "later").wait(timeout=TIMEOUT)
    assert (status.done, status.failed) == (3, 0)
