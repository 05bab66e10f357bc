"""Fixtures of the distributed tests; the servers themselves come from tests/support/fixtures.py."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from ace_workers.distributed import RedisSkillbookStore, SnapshotCache
from ace_workers.distributed.service import reset_event_loop
from tests.support.workers import ENV_PREFIX


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
