"""A worker process keeps the skillbooks it used last, not every one a message ever named."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest
import redis

from ace_workers.distributed.errors import InvalidSettingError
from ace_workers.distributed.service import Service
from ace_workers.distributed.settings import WorkerSettings
from ace_workers.sim import failure_traces
from tests.support.workers import build_test_service, running_service

BOUND = 3


@pytest.fixture
def service(redis_client: redis.Redis, redis_url: str) -> Iterator[Service]:
    """A service whose runtime keeps three skillbooks; no workers."""
    built = build_test_service(redis_url, skillbook_cache_size=BOUND)
    try:
        yield built
    finally:
        built.close()


def test_the_default_keeps_256_skillbooks() -> None:
    assert WorkerSettings().skillbook_cache_size == 256


def test_the_bound_is_read_from_the_environment_and_checked() -> None:
    assert WorkerSettings.from_env({"ACE_SKILLBOOK_CACHE_SIZE": "8"}).skillbook_cache_size == 8
    with pytest.raises(InvalidSettingError, match="ACE_SKILLBOOK_CACHE_SIZE"):
        WorkerSettings(skillbook_cache_size=0)


def test_more_skillbooks_than_the_bound_keep_the_cache_at_the_bound(service: Service) -> None:
    for index in range(10):
        service.runtime.pipeline("trace_analyser", f"book{index}")
    assert service.runtime.loaded_skillbooks() == ["book7", "book8", "book9"]


def test_the_pipelines_and_skillbooks_of_dropped_names_are_released(service: Service) -> None:
    runtime = service.runtime
    pipelines, books = [], []
    for index in range(10):
        pipelines.append(weakref.ref(runtime.pipeline("trace_analyser", f"book{index}")[0]))
        books.append(weakref.ref(runtime.skillbook(f"book{index}")))
    gc.collect()
    assert sum(ref() is not None for ref in pipelines) == BOUND
    assert sum(ref() is not None for ref in books) == BOUND


def test_the_skillbook_used_last_stays_and_the_least_recently_used_goes(service: Service) -> None:
    runtime = service.runtime
    for name in ("a", "b", "c"):
        runtime.pipeline("trace_analyser", name)
    runtime.skillbook("a")  # used again: now the most recent
    runtime.pipeline("trace_analyser", "d")
    assert runtime.loaded_skillbooks() == ["c", "a", "d"]


def test_a_pipeline_is_built_once_while_its_skillbook_stays(service: Service) -> None:
    first = service.runtime.pipeline("trace_analyser", "kept")
    assert service.runtime.pipeline("trace_analyser", "kept") is first


def test_a_dropped_skillbook_is_built_again_when_used(service: Service) -> None:
    runtime = service.runtime
    first = runtime.pipeline("trace_analyser", "dropped")
    for index in range(BOUND):
        runtime.pipeline("trace_analyser", f"other{index}")
    assert runtime.pipeline("trace_analyser", "dropped") is not first


def test_a_dropped_skillbook_still_learns_when_used_again(redis_client: redis.Redis, redis_url: str) -> None:
    with running_service(redis_url, learn_threads=2, skillbook_cache_size=1) as service:
        first = service.producer.enqueue_traces(failure_traces(2), "first").wait(timeout=60)
        service.producer.enqueue_traces(failure_traces(2), "second").wait(timeout=60)
        assert service.runtime.loaded_skillbooks() == ["second"]
        version = service.runtime.store("first").version()
        again = service.producer.enqueue_traces(failure_traces(2), "first").wait(timeout=60)
        assert (first.done, again.done) == (2, 2)
        assert service.runtime.store("first").version() > version
