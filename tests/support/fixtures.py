"""The suite's server and environment fixtures (a pytest plugin, loaded by the top conftest).

Each pytest process (each xdist worker) starts its own ``redis-server`` on a free port the
first time a test asks for Redis, its own Redis Cluster and RabbitMQ node likewise, and stops
them when it ends. Two overrides, for a run against servers of your own:

- ``ACE_TEST_REDIS_URL``: a Redis database the tests flush (database 15 only, so a shared
  server's other databases are safe); one database serves one pytest process, so use it
  with ``-n 0``.
- ``ACE_TEST_RABBITMQ_URL``: the amqp:// URL of a vhost the RabbitMQ tests may use.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import redis

from ace_workers.distributed import RedisSkillbookStore, SnapshotCache
from ace_workers.distributed.worker.celery_worker import reset_event_loop

from .servers import LocalCluster, PrivateRabbitMQ, PrivateRedis
from .workers import ENV_PREFIX

TEST_REDIS_URL_ENV = "ACE_TEST_REDIS_URL"
TEST_RABBITMQ_URL_ENV = "ACE_TEST_RABBITMQ_URL"
OVERRIDE_DB = 15  # the only database of a server of your own the tests may flush

# The suite's own variables, not settings of ace-workers: taken out of the environment when
# this plugin loads, so neither WorkerSettings.from_env() (which refuses an unknown ACE_*
# variable) nor a command a test starts (which inherits the environment) sees them. xdist
# workers, started after that, get them through pytest_configure_node.
_overrides: dict[str, str] = {
    name: os.environ.pop(name) for name in (TEST_REDIS_URL_ENV, TEST_RABBITMQ_URL_ENV) if name in os.environ
}


def override(name: str) -> str | None:
    """The value of the suite's variable ``name`` ($ACE_TEST_REDIS_URL, ...) as the run found it."""
    return _overrides.get(name)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """Hand the override variables to an xdist worker (an xdist hook)."""
    node.workerinput["ace_test_overrides"] = dict(_overrides)


def pytest_configure(config: pytest.Config) -> None:
    """In an xdist worker, take the override variables the controller handed over."""
    _overrides.update(getattr(config, "workerinput", {}).get("ace_test_overrides", {}))


def _check_override(url: str) -> None:
    db = redis.connection.parse_url(url).get("db", 0)
    if int(db) != OVERRIDE_DB:
        pytest.fail(
            f"{TEST_REDIS_URL_ENV}={url!r} names database {db}; the tests flush their database, so on "
            f"a server of your own they only use database {OVERRIDE_DB} (unset it: each test process "
            "then starts a private redis-server)",
            pytrace=False,
        )
    if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > 1:
        pytest.fail(
            f"{TEST_REDIS_URL_ENV} names one database, which parallel test processes would flush under "
            "each other: run with -n 0, or unset it",
            pytrace=False,
        )


@pytest.fixture(scope="session")
def redis_server_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """This test process's Redis: a private redis-server, or $ACE_TEST_REDIS_URL."""
    url = override(TEST_REDIS_URL_ENV)
    if url:
        _check_override(url)
        yield url
        return
    with PrivateRedis(tmp_path_factory.mktemp("redis"), persistent=False) as server:
        yield server.url


def connect_test_redis(url: str, **options: Any) -> redis.Redis:
    """A client of the test Redis; fails the test (never skips) if it is unreachable."""
    client = redis.Redis.from_url(url, socket_connect_timeout=3, socket_timeout=30, **options)
    try:
        client.ping()
    except redis.RedisError as exc:
        client.close()
        pytest.fail(f"cannot reach the test Redis at {url!r} ({exc})", pytrace=False)
    return client


@pytest.fixture
def redis_url(redis_server_url: str) -> str:
    """Where the test Redis is (see :func:`redis_server_url`)."""
    return redis_server_url


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


# A cluster takes two seconds to reach state ok (Redis holds a new master back that long):
# booted in the background as soon as collection shows a test that needs one.
_cluster_boot: Future[LocalCluster] | None = None


def _needs_cluster(item: pytest.Item) -> bool:
    callspec = getattr(item, "callspec", None)
    return "redis_cluster" in getattr(item, "fixturenames", ()) or (
        callspec is not None and callspec.params.get("redis_client") == "cluster"
    )


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start booting this process's cluster while its first tests run, if any test may need it."""
    global _cluster_boot
    if _cluster_boot is None and any(_needs_cluster(item) for item in session.items):
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cluster-boot")
        _cluster_boot = pool.submit(LocalCluster)
        pool.shutdown(wait=False)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Stop a booted cluster that no test took (a worker given none of the cluster tests)."""
    if _cluster_boot is not None and _cluster_boot.exception(timeout=60) is None:
        _cluster_boot.result().close()  # closing twice is harmless


@pytest.fixture(scope="session")
def redis_cluster() -> Iterator[LocalCluster]:
    """A Redis Cluster of three masters for this test process, stopped after it."""
    cluster = _cluster_boot.result(timeout=60) if _cluster_boot is not None else LocalCluster()
    try:
        yield cluster
    finally:
        cluster.close()


def server_or_cluster(request: pytest.FixtureRequest) -> Iterator[redis.Redis]:
    """For a ``redis_client`` fixture parametrized "server"/"cluster": that client, flushed around the test.

    A test module whose store behaviour must hold on Redis Cluster too overrides
    ``redis_client`` with it; its tests then run on both.
    """
    client: Any
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


@pytest.fixture(scope="session")
def rabbitmq_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrivateRabbitMQ | None]:
    """This test process's private RabbitMQ node (None when $ACE_TEST_RABBITMQ_URL names a broker)."""
    if override(TEST_RABBITMQ_URL_ENV):
        yield None
        return
    # A short folder: the node's files live under it, and Erlang dislikes long paths.
    node = PrivateRabbitMQ(Path(tmp_path_factory.mktemp("rabbitmq")))
    try:
        node.start()
        yield node
    finally:
        node.stop()


@pytest.fixture(scope="session")
def rabbitmq_url(rabbitmq_node: PrivateRabbitMQ | None) -> Iterator[str]:
    """The default vhost of this test process's RabbitMQ node (user guest), or $ACE_TEST_RABBITMQ_URL."""
    if rabbitmq_node is None:  # $ACE_TEST_RABBITMQ_URL names the broker
        yield str(override(TEST_RABBITMQ_URL_ENV))
        return
    yield rabbitmq_node.url


@pytest.fixture(scope="session")
def rabbitmqctl(rabbitmq_node: PrivateRabbitMQ | None) -> Any:
    """``rabbitmqctl`` against the test broker: the private node's, or the local default node's."""
    if rabbitmq_node is not None:
        return rabbitmq_node.ctl
    return local_rabbitmqctl


def local_rabbitmqctl(*args: str) -> str:
    """Run ``rabbitmqctl`` against the machine's default node (for $ACE_TEST_RABBITMQ_URL)."""
    done = subprocess.run(["rabbitmqctl", "-q", *args], capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise RuntimeError(f"rabbitmqctl {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout


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
