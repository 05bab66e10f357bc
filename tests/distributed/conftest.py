"""Fixtures of the distributed tests; the servers themselves come from tests/support/fixtures.py."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import redis

from ace_workers.distributed import RedisSkillbookStore, SnapshotCache
from ace_workers.distributed.service import Service, build_service, local_workers, reset_event_loop
from ace_workers.distributed.settings import WorkerSettings

from .helpers import ENV_PREFIX
from .recipes import TEST_RECIPES


@pytest.fixture
def store(redis_client: redis.Redis) -> RedisSkillbookStore:
    """An empty skillbook "book" with its own snapshot cache."""
    return RedisSkillbookStore(redis_client, "book", snapshot_cache=SnapshotCache())


@pytest.fixture(autouse=True)
def _fresh_event_loop_hub() -> Iterator[None]:
    """Each test's in-process Celery workers start with no leftover (closed) kombu hub."""
    reset_event_loop()
    yield
    reset_event_loop()


@contextmanager
def running_service(redis_url: str, *, learn_threads: int = 4, **settings: Any) -> Iterator[Service]:
    """In-process workers for the three queues on the test Redis, with a queue prefix of their own."""
    options = {
        "queue_prefix": f"t{uuid.uuid4().hex[:8]}",
        "sim_trust_threshold": 0,
        "recipes": TEST_RECIPES,
        **settings,
    }
    built = build_service(WorkerSettings(redis_url=redis_url, **options), redis_url=redis_url)
    try:
        with local_workers(built, learn_threads=learn_threads):
            yield built
    finally:
        built.close()


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """No ACE_* settings from the surrounding shell; run in tmp_path, so files have short names.

    (Short, because rich breaks a word longer than the terminal, such as a long path.)
    """
    for name in list(os.environ):
        if name.startswith(ENV_PREFIX):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    return monkeypatch
