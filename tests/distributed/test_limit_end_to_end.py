"""A full skillbook through real in-process workers: samples fail once, are dead-lettered, never retried."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import redis

from ace_workers.distributed.keys import dead_letters_key
from ace_workers.distributed.local import Service

from .conftest import running_service
from .test_end_to_end import traces_for

LIMIT = 2


@pytest.fixture
def small_service(redis_client: redis.Redis, redis_url: str) -> Iterator[Service]:
    """Workers whose skillbooks hold at most LIMIT skills; retries would be quick, so they would show."""
    with running_service(
        redis_url, max_skillbook_skills=LIMIT, task_max_retries=3, retry_backoff_seconds=0.01
    ) as built:
        yield built


def test_a_batch_against_a_full_skillbook_ends_with_failures_naming_the_limit(small_service: Service) -> None:
    # Five topics, one rule each: only LIMIT rules fit, the samples teaching the others fail.
    handle = small_service.producer.enqueue_traces(traces_for(10, topics=5), "tiny")
    status = handle.wait(timeout=60)
    assert status.done + status.failed == status.total == 10
    assert status.failed >= 3, handle.errors()
    errors = handle.errors()
    assert {e["step"] for e in errors} == {"ApplyStep"}
    for error in errors:
        assert error["error"].startswith("SkillbookFullError: skillbook 'tiny' is full"), error
        assert f"above the limit of {LIMIT} (ACE_MAX_SKILLBOOK_SKILLS)" in error["error"], error
    store = small_service.runtime.store("tiny")
    assert store.active_skills() == len(store.export().skills()) == LIMIT
    metrics = small_service.runtime.metrics
    # Refused for good at the first attempt: parked, not retried.
    assert metrics.value("ace_step_retries_total", step="ApplyStep") == 0
    key = dead_letters_key(small_service.runtime.settings.queue_prefix)
    dead = [json.loads(raw) for raw in small_service.runtime.redis.lrange(key, 0, -1)]
    assert len(dead) == status.failed
    assert all(d["step"] == "ApplyStep" and "SkillbookFullError" in d["error"] for d in dead)
