"""Fixtures of the distributed tests: a real Redis, database 15 only, flushed around every test."""

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

from .cluster import LocalCluster
from .helpers import ENV_PREFIX, rabbitmq_vhost
from .recipes import TEST_RECIPES

TEST_REDIS_URL_ENV = "ACE_TEST_REDIS_URL"
DEFAULT_TEST_REDIS_URL = "redis://127.0.0.1:6379/15"
TEST_DB = 15  # the only database the tests may flush


def connect_test_redis(url: str, **options: Any) -> redis.Redis:
    """A client of the test database; fails the test (never skips) if Redis is unreachable or not db 15."""
    client = redis.Redis.from_url(url, socket_connect_timeout=3, socket_timeout=30, **options)
    db = client.connection_pool.connection_kwargs.get("db", 0)
    if int(db) != TEST_DB:
        client.close()
        pytest.fail(
            f"{TEST_REDIS_URL_ENV}={url!r} names database {db}; the tests flush their database, "
            f"so they only run against database {TEST_DB}",
            pytrace=False,
        )
    try:
        client.ping()
    except redis.RedisError as exc:
        client.close()
        pytest.fail(
            f"cannot reach the test Redis at {url!r} ({exc}); start redis-server or point "
            f"{TEST_REDIS_URL_ENV} at one (database {TEST_DB} is flushed by every test)",
            pytrace=False,
        )
    return client


@pytest.fixture
def redis_url(test_redis_url_override: str | None) -> str:
    """Where the test Redis is: $ACE_TEST_REDIS_URL, else database 15 of the local server."""
    return test_redis_url_override or DEFAULT_TEST_REDIS_URL


@pytest.fixture
def redis_client(redis_url: str) -> Iterator[redis.Redis]:
    """A client of the test database, flushed before and after the test."""
    client = connect_test_redis(redis_url)
    client.flushdb()
    try:
        yield client
    finally:
        client.flushdb()
        client.close()


@pytest.fixture(scope="session")
def redis_cluster() -> Iterator[LocalCluster]:
    """A Redis Cluster of three masters for this test run, stopped after it."""
    cluster = LocalCluster()
    try:
        yield cluster
    finally:
        cluster.close()


def server_or_cluster(request: pytest.FixtureRequest) -> Iterator[redis.Redis]:
    """For a ``redis_client`` fixture parametrized "server"/"cluster": that client, flushed around the test.

    A test module whose store behaviour must hold on Redis Cluster too overrides
    ``redis_client`` with it; its tests then run on both.
    """
    if request.param == "server":
        client = connect_test_redis(request.getfixturevalue("redis_url"))
    else:
        client = request.getfixturevalue("redis_cluster").client()
    client.flushdb() if request.param == "server" else client.flushall()
    try:
        yield client
    finally:
        client.flushdb() if request.param == "server" else client.flushall()
        client.close()


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
        if name.startswith(ENV_PREFIX) and name != TEST_REDIS_URL_ENV:
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    return monkeypatch


@pytest.fixture(scope="session")
def rabbitmq_url() -> Iterator[str]:
    """A vhost of this test run on the local RabbitMQ (user guest), deleted after the run."""
    with rabbitmq_vhost() as url:
        yield url
