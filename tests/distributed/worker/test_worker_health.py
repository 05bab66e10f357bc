"""The consumption watchdog, against the real Redis broker: queues with real messages, a clock of its own."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator

import pytest
import redis

from ace_workers.distributed import WorkerSettings
from ace_workers.distributed.service import Service, build_service
from ace_workers.distributed.worker.health import EXIT_STALLED, ConsumptionWatchdog
from ace_workers.observability import start_metrics_server
from ace_workers.sim import failure_traces
from tests.support.waiting import wait_for

STALL = 10.0


class Clock:
    """A monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def service(redis_url: str, redis_client: redis.Redis) -> Iterator[Service]:
    settings = WorkerSettings(redis_url=redis_url, queue_prefix=f"t{uuid.uuid4().hex[:8]}")
    built = build_service(settings, redis_url=redis_url)
    try:
        yield built
    finally:
        built.close()


def watchdog_for(service: Service, clock: Clock, exits: list[int] | None = None) -> ConsumptionWatchdog:
    return ConsumptionWatchdog(
        service.dispatcher,
        [service.runtime.queue("learn")],
        stall_seconds=STALL,
        check_seconds=0.05,
        exit_process=(exits if exits is not None else []).append,
        clock=clock,
    )


def test_a_queue_holding_messages_nobody_took_for_the_window_is_stalled(service: Service) -> None:
    clock = Clock()
    watchdog = watchdog_for(service, clock)
    service.producer.enqueue_traces(failure_traces(2), "book")  # two messages wait on the learn queue

    assert watchdog.check().healthy  # the first look that sees them starts their clock
    clock.now += STALL - 1
    assert watchdog.check().healthy
    clock.now += 2
    report = watchdog.check()

    assert report.stalled == [service.runtime.queue("learn")]
    assert report.queues[service.runtime.queue("learn")]["waiting"] == 2
    assert report.problem == (
        f"queue {service.runtime.queue('learn')} holds messages this worker has taken none of for over 10 s"
    )


def test_an_idle_worker_with_an_empty_queue_is_healthy(service: Service) -> None:
    clock = Clock()
    watchdog = watchdog_for(service, clock)
    clock.now += 100 * STALL
    assert watchdog.check().healthy


def test_messages_arriving_after_a_quiet_hour_are_no_stall(service: Service) -> None:
    clock = Clock()
    watchdog = watchdog_for(service, clock)
    clock.now += 360 * STALL
    assert watchdog.check().healthy  # quiet, nothing waiting
    service.producer.enqueue_traces(failure_traces(1), "book")
    assert watchdog.check().healthy  # just arrived: the worker has had no time to take it


def test_recent_activity_on_the_queue_keeps_the_worker_healthy(service: Service) -> None:
    clock = Clock()
    watchdog = watchdog_for(service, clock)
    service.producer.enqueue_traces(failure_traces(1), "book")
    watchdog.check()
    clock.now += 2 * STALL
    watchdog.note_activity(service.runtime.queue("learn"))  # a message received or a task run
    clock.now += STALL - 1
    assert watchdog.check().healthy


def test_an_unreachable_broker_is_reported_but_is_no_stall(redis_client: redis.Redis, redis_url: str) -> None:
    # The store's Redis answers (a process checks its schema there when it starts); the broker does not.
    down = "redis://127.0.0.1:1/0"
    settings = WorkerSettings(
        redis_url=redis_url, broker_url=down, queue_prefix="tdown", redis_connect_retries=0
    )
    built = build_service(settings, redis_url=redis_url, broker_url=down)
    try:
        clock = Clock()
        watchdog = ConsumptionWatchdog(
            built.dispatcher,
            ["tdown.learn"],
            stall_seconds=STALL,
            check_seconds=1,
            exit_process=[].append,
            clock=clock,
        )
        clock.now += 2 * STALL
        report = watchdog.check()
    finally:
        built.close()
    assert report.healthy
    assert (report.problem or "").startswith("cannot ask the broker")


def test_a_stalled_worker_exits_with_its_status_and_healthz_says_why(service: Service) -> None:
    clock = Clock()
    exits: list[int] = []
    watchdog = watchdog_for(service, clock, exits)
    server = start_metrics_server(service.runtime.metrics, 0, host="127.0.0.1", health=watchdog.health)
    service.producer.enqueue_traces(failure_traces(1), "book")
    try:
        watchdog.check()  # sees the message: its clock starts
        watchdog.start()
        assert read_healthz(server.port)[0] == 200
        clock.now += STALL + 1
        wait_for(lambda: exits, 10, "the watchdog to end the process", every=0.01)
        status, body = read_healthz(server.port)
    finally:
        watchdog.stop()
        server.close()

    assert exits == [EXIT_STALLED]
    assert status == 503
    assert body["stalled"] == [service.runtime.queue("learn")]


def read_healthz(port: int) -> tuple[int, dict[str, object]]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())
