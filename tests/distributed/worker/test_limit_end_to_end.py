"""A full skillbook through real in-process workers: learning goes on, extra ADDs are counted."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from ace_workers.distributed.service import Service
from ace_workers.distributed.store.keys import dead_letters_key
from ace_workers.sim import failure_traces
from tests.support.workers import running_service

LIMIT = 2


@pytest.fixture
def small_service(redis_client: redis.Redis, redis_url: str) -> Iterator[Service]:
    """Workers whose skillbooks hold at most LIMIT skills."""
    with running_service(redis_url, max_skillbook_skills=LIMIT) as built:
        yield built


def test_a_batch_against_a_full_skillbook_completes_and_counts_the_adds_left_out(
    small_service: Service,
) -> None:
    # Five topics, one rule each: only LIMIT rules fit; the samples teaching the others still finish.
    handle = small_service.producer.enqueue_traces(failure_traces(10, topics=5), "tiny")
    status = handle.wait(timeout=60)
    assert (status.done, status.failed, status.total) == (10, 0, 10), handle.errors()

    store = small_service.runtime.store("tiny")
    assert store.active_skills() == len(store.export().skills()) == LIMIT
    left_out = store.stats()["adds_skipped_full"]
    assert left_out >= 3  # at least one ADD for each of the three rules that did not fit
    metrics = small_service.runtime.metrics
    assert metrics.value("ace_store_adds_skipped_full_total", skillbook="tiny") == left_out
    key = dead_letters_key(small_service.runtime.settings.queue_prefix)
    assert small_service.runtime.redis.llen(key) == 0
