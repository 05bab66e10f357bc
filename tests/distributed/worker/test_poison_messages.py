"""No poison message: whatever a step raises, its message is acknowledged once and the worker moves on.

Real private Redis, in-process workers of one learn thread: a message left unacknowledged
would hold that one slot, and the next batch would never run.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from ace_workers.distributed.service import Service
from ace_workers.distributed.worker.dead_letters import read_dead_letters
from ace_workers.sim import failure_traces
from tests.support.processes import start_worker, stop, wait_until_served
from tests.support.recipes import RAISED_BY_STEPS, TEST_RECIPES
from tests.support.waiting import wait_for
from tests.support.workers import build_test_service, running_service

# Where kombu's Redis transport keeps the messages delivered and not yet acknowledged.
KOMBU_UNACKED = "unacked"
TIMEOUT = 30


@pytest.fixture
def service(redis_client: redis.Redis, redis_url: str) -> Iterator[Service]:
    # A message left unacknowledged comes back after the visibility timeout. 1 s was too short:
    # on a loaded machine a failing step's dead letter and acknowledgement took longer, and the
    # message came back (once, at least once) before it was acknowledged.
    with running_service(redis_url, learn_threads=1, visibility_timeout_seconds=5) as built:
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


@pytest.fixture
def prefork_worker(
    tmp_path: Path, redis_client: redis.Redis, redis_url: str
) -> Iterator[tuple[Service, Path]]:
    """A real ``ace-workers worker`` process, prefork pool of one child, and a producer beside it."""
    service = build_test_service(redis_url)
    values = {
        "ACE_REDIS_URL": redis_url,
        "ACE_QUEUE_PREFIX": service.runtime.settings.queue_prefix,
        "ACE_RECIPES": TEST_RECIPES,
        "ACE_SIM_TRUST_THRESHOLD": "0",
        "ACE_VISIBILITY_TIMEOUT_SECONDS": "2",
    }
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path), **values}
    log = tmp_path / "worker.log"
    worker = start_worker(env, log, queues="execute,learn,write", pool="prefork", concurrency=1)
    try:
        wait_until_served(service, ["execute", "learn", "write"])
        yield service, log
    finally:
        # Its tests are over: a warm shutdown would only wait out the broker poll (about a second).
        stop(worker, sig=signal.SIGKILL)
        service.close()


@pytest.mark.slow
@pytest.mark.parametrize("error", sorted(RAISED_BY_STEPS))
def test_a_prefork_child_fails_the_sample_of_a_step_raising_a_base_exception_and_serves_on(
    prefork_worker: tuple[Service, Path], error: str
) -> None:
    service, log = prefork_worker
    raising = service.producer.enqueue_traces(failure_traces(1), "book", recipe=f"raises_{error}")
    later = service.producer.enqueue_traces(failure_traces(2), "later")
    try:
        statuses = [raising.wait(timeout=60), later.wait(timeout=60)]
    except TimeoutError as exc:
        raise AssertionError(f"{exc}; worker log:\n{log.read_text()[-3000:]}") from exc
    assert [(status.done, status.failed) for status in statuses] == [(0, 1), (2, 0)]
