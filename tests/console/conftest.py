"""Fixtures of the console tests: a fleet that has learned, and the console serving it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from ace_workers.distributed.service import Service
from ace_workers.sim import failure_traces
from tests.support.console import RunningConsole, running_console
from tests.support.workers import build_test_service, running_service

LEARNED = "support"


@pytest.fixture
def fleet(redis_client: redis.Redis, redis_url: str) -> Iterator[Service]:
    """In-process workers for the three queues that learned ``support`` from 8 failure traces."""
    with running_service(redis_url) as service:
        handle = service.producer.enqueue_traces(failure_traces(8), LEARNED)
        status = handle.wait(timeout=60)
        assert (status.done, status.failed) == (8, 0)
        yield service


@pytest.fixture
def idle_service(redis_client: redis.Redis, redis_url: str) -> Iterator[Service]:
    """The fleet's settings on the test Redis, without workers: for views of data a test writes itself."""
    service = build_test_service(redis_url)
    try:
        yield service
    finally:
        service.close()


@pytest.fixture
def console(fleet: Service) -> Iterator[RunningConsole]:
    """The console of the learned fleet, with users and a bearer token (tests/support/console.py)."""
    with running_console(fleet) as running:
        yield running
