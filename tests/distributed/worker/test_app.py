"""The Celery app: reliability settings, start-up checks, and a real round trip through Redis (db 15)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from celery import Celery
from celery.contrib.testing.worker import start_worker
from celery.exceptions import QueueNotFound
from kombu.exceptions import OperationalError

from ace_workers.distributed.errors import InvalidSettingError
from ace_workers.distributed.settings import WorkerSettings
from ace_workers.distributed.worker.app import (
    check_app_security,
    check_write_concurrency,
    create_app,
    ping_redis,
)
from ace_workers.distributed.worker.errors import (
    RedisUnavailable,
    UnsafeSerializerError,
    WorkerConfigError,
    WriteConcurrencyError,
)
from ace_workers.errors import AceError
from tests.support.processes import stop
from tests.support.servers import PrivateRedis
from tests.support.waiting import wait_for


@pytest.fixture
def settings() -> WorkerSettings:
    """Settings with a queue prefix of their own, so no other test's messages reach this test's workers."""
    return WorkerSettings(queue_prefix=f"t{uuid.uuid4().hex[:8]}", visibility_timeout_seconds=120)


@pytest.fixture
def app(settings: WorkerSettings, redis_url: str, redis_client: redis.Redis) -> Iterator[Celery]:
    """An app on the test Redis (db 15, flushed around the test by ``redis_client``)."""
    celery_app = create_app(settings, broker_url=redis_url)
    yield celery_app
    celery_app.close()


# -- configuration --------------------------------------------------------------------


def test_the_app_uses_json_only(app: Celery) -> None:
    conf = app.conf
    assert (conf.task_serializer, conf.result_serializer, conf.event_serializer) == ("json", "json", "json")
    assert list(conf.accept_content) == ["json"]
    assert list(conf.result_accept_content) == ["json"]


def test_the_app_acknowledges_late_and_requeues_tasks_of_a_lost_worker(app: Celery) -> None:
    assert app.conf.task_acks_late is True
    assert app.conf.task_reject_on_worker_lost is True
    assert app.conf.worker_prefetch_multiplier == 1
    assert app.conf.task_track_started is True
    assert app.conf.worker_hijack_root_logger is False


def test_the_visibility_timeout_is_the_same_for_broker_and_results(
    app: Celery, settings: WorkerSettings
) -> None:
    broker = app.conf.broker_transport_options["visibility_timeout"]
    results = app.conf.result_backend_transport_options["visibility_timeout"]
    assert broker == results == settings.visibility_timeout_seconds == 120


@pytest.mark.parametrize(("visibility", "interval"), [(4, 1), (60, 10), (3600, 10)])
def test_abandoned_messages_are_swept_at_a_pace_set_by_the_visibility_timeout(
    visibility: int, interval: int
) -> None:
    app = create_app(
        WorkerSettings(visibility_timeout_seconds=visibility), broker_url="redis://127.0.0.1:6379/15"
    )
    options = app.conf.broker_transport_options
    # kombu's default (10 s x 10) would leave a crashed worker's task unacknowledged for 100 s.
    assert (options["unacked_restore_interval"], options["unacked_restore_throttle"]) == (interval, 1)


# A consumer that takes a message without acknowledging it, takes kombu's sweep lock, and waits to be killed.
DIES_MID_SWEEP = """
import json, signal, sys
from kombu import Connection
url, options, name = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
with Connection(url, transport_options=options) as connection:
    connection.SimpleQueue(name).get(timeout=10)
    channel = connection.default_channel
    assert channel.client.lock(channel.unacked_mutex_key, timeout=options["unacked_mutex_expire"]).acquire(
        blocking=False
    )
    print("taken", flush=True)
    signal.pause()  # holding the message and the lock until the test's SIGKILL
"""


@pytest.mark.slow
def test_a_message_of_a_worker_killed_while_sweeping_comes_back_soon_after_the_visibility_timeout(
    redis_url: str, redis_client: redis.Redis
) -> None:
    visibility = 2
    app = create_app(WorkerSettings(visibility_timeout_seconds=visibility), broker_url=redis_url)
    options = app.conf.broker_transport_options
    name = f"abandoned-{uuid.uuid4().hex[:8]}"
    with app.connection_for_write() as connection:
        queue = connection.SimpleQueue(name)
        queue.put({"sample": 1})
        dying = subprocess.Popen(
            [sys.executable, "-c", DIES_MID_SWEEP, redis_url, json.dumps(options), name],
            stdout=subprocess.PIPE,
            start_new_session=True,
        )
        try:
            assert dying.stdout is not None
            assert dying.stdout.readline() == b"taken\n"
        finally:
            stop(dying, sig=signal.SIGKILL)
            if dying.stdout is not None:
                dying.stdout.close()
        assert redis_client.llen(name) == 0  # kombu keeps a queue in a Redis list of its name

        # Sweep as a surviving worker does, every restore interval, until the message is back.
        channel = connection.default_channel

        def swept_back() -> bool:
            if redis_client.llen(name):
                return True
            channel.qos.restore_visible(num=10, interval=1)
            return False

        # kombu's own 300 s lock would hold every sweep off for five minutes.
        wait_for(
            swept_back,
            2 * visibility + 5,
            "the abandoned message to come back",
            every=options["unacked_restore_interval"],
        )
        assert queue.get(timeout=1).payload == {"sample": 1}
        queue.close()
    app.close()


def test_connection_failures_are_bounded(app: Celery, settings: WorkerSettings) -> None:
    conf = app.conf
    assert conf.broker_connection_retry_on_startup is True
    assert conf.broker_connection_max_retries == settings.redis_connect_retries
    assert conf.broker_transport_options["socket_connect_timeout"] == settings.redis_connect_timeout_seconds
    assert conf.broker_transport_options["socket_timeout"] == settings.redis_socket_timeout_seconds
    assert conf.redis_socket_connect_timeout == settings.redis_connect_timeout_seconds
    assert conf.task_publish_retry_policy["max_retries"] >= 1


def test_kombu_and_the_result_backend_receive_the_timeouts(app: Celery, settings: WorkerSettings) -> None:
    with app.connection() as connection:
        channel = connection.default_channel
        assert channel.visibility_timeout == settings.visibility_timeout_seconds
        assert channel.socket_connect_timeout == settings.redis_connect_timeout_seconds
        assert channel.socket_timeout == settings.redis_socket_timeout_seconds
    assert app.backend.connparams["socket_timeout"] == settings.redis_socket_timeout_seconds
    assert app.backend.connparams["socket_connect_timeout"] == settings.redis_connect_timeout_seconds


def test_the_three_queues_are_declared_and_execute_is_the_default(
    app: Celery, settings: WorkerSettings
) -> None:
    names = settings.queue_names()
    assert sorted(queue.name for queue in app.conf.task_queues) == sorted(names.values())
    assert app.conf.task_default_queue == names["execute"]
    assert app.conf.result_expires == settings.result_ttl_seconds
    assert app.conf.broker_url == app.conf.result_backend


def test_sending_to_an_undeclared_queue_fails_instead_of_filling_a_queue_nobody_reads(app: Celery) -> None:
    def do_nothing() -> None:
        return None

    noop = app.task(name="tests.noop", shared=False)(do_nothing)
    with pytest.raises(QueueNotFound):
        noop.apply_async(queue="no-such-queue")


def test_create_app_needs_a_redis_url() -> None:
    with pytest.raises(InvalidSettingError, match="ACE_REDIS_URL"):
        create_app(WorkerSettings())


def test_create_app_accepts_a_unix_socket_url_in_the_redis_py_form() -> None:
    app = create_app(WorkerSettings(redis_url="unix:///tmp/ace-test.sock?db=2"))
    assert app.conf.broker_url == "redis+socket:///tmp/ace-test.sock?virtual_host=2"
    app.close()


# -- start-up checks ------------------------------------------------------------------


def test_check_app_security_passes_the_app_create_app_builds(app: Celery) -> None:
    check_app_security(app)


@pytest.mark.parametrize(
    ("setting", "value"),
    [
        ("accept_content", ["json", "pickle"]),
        ("accept_content", ["application/x-python-serialize"]),
        ("result_accept_content", ["pickle"]),
        ("task_serializer", "pickle"),
        ("result_serializer", "pickle"),
    ],
)
def test_a_worker_configured_for_pickle_refuses_to_start(app: Celery, setting: str, value: Any) -> None:
    app.conf[setting] = value
    with pytest.raises(UnsafeSerializerError) as caught:
        check_app_security(app)
    assert setting in caught.value.settings
    assert "pickle" in str(caught.value)
    assert isinstance(caught.value, WorkerConfigError)


def test_the_write_queue_refuses_concurrency_above_one_unless_forced() -> None:
    check_write_concurrency(["ace.write"], 1)
    check_write_concurrency(["ace.execute", "ace.learn"], 16)
    with pytest.raises(WriteConcurrencyError) as caught:
        check_write_concurrency(["ace.learn", "ace.write"], 4)
    assert (caught.value.queue, caught.value.concurrency) == ("ace.write", 4)
    check_write_concurrency(["ace.write"], 4, force=True)


def test_the_write_queues_can_be_named_exactly() -> None:
    check_write_concurrency(["t.writers"], 1, write_queues=["t.writers"])
    with pytest.raises(WriteConcurrencyError):
        check_write_concurrency(["t.writers"], 2, write_queues=["t.writers"])
    check_write_concurrency(["ace.write"], 2, write_queues=["t.writers"])  # not a write queue here


def test_every_write_partition_is_refused_more_than_one_slot() -> None:
    partitions = WorkerSettings(write_partitions=3).write_queues()
    for queue in partitions:
        with pytest.raises(WriteConcurrencyError):
            check_write_concurrency(["ace.learn", queue], 2, write_queues=partitions)
        with pytest.raises(WriteConcurrencyError):
            check_write_concurrency([queue], 2)  # recognised by its name alone too
    check_write_concurrency(["ace.learn"], 16, write_queues=partitions)


def test_write_concurrency_must_be_at_least_one() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        check_write_concurrency(["ace.learn"], 0)


def test_ping_redis_sends_one_ping_to_the_redis_at_the_url_and_closes_its_connection(tmp_path: Path) -> None:
    # A server of this test's own: its command counts and client list are this test's alone.
    with PrivateRedis(tmp_path / "redis", persistent=False) as server:
        observer = redis.Redis(port=server.port)
        try:
            observer.config_resetstat()
            connected = len(observer.client_list())
            assert ping_redis(server.url) is None
            assert observer.info("commandstats")["cmdstat_ping"]["calls"] == 1  # once: no retry
            # The probe's connection is closed, not pooled: the server notices on its next turn.
            wait_for(
                lambda: len(observer.client_list()) == connected,
                5,
                "the probe's connection to close",
                every=0.01,
                detail=lambda: observer.client_list(),
            )
        finally:
            observer.close()


def test_ping_redis_on_a_closed_port_fails_fast_with_a_clear_error_and_no_password() -> None:
    url = "redis://:hunter2@127.0.0.1:1/0"
    started = time.monotonic()
    with pytest.raises(RedisUnavailable) as caught:
        ping_redis(url, timeout=3.0)
    assert time.monotonic() - started < 10  # generous: a refused connection fails at once
    error = caught.value
    assert isinstance(error, AceError)
    assert isinstance(error, ConnectionError)
    assert error.url == "redis://:***@127.0.0.1:1/0"
    assert "127.0.0.1:1" in str(error)
    assert "ACE_REDIS_URL" in str(error)
    assert "hunter2" not in str(error)


def test_publishing_while_redis_is_down_fails_within_seconds(settings: WorkerSettings) -> None:
    app = create_app(settings, broker_url="redis://127.0.0.1:1/0")

    def do_nothing() -> None:
        return None

    # ignore_result: the publish itself is what fails (a task with a result fails first
    # on the result backend, with Celery's "Retry limit exceeded" RuntimeError).
    noop = app.task(name="tests.noop", shared=False, ignore_result=True)(do_nothing)
    started = time.monotonic()
    try:
        with pytest.raises(OperationalError, match="Connection refused"):
            noop.apply_async(queue=settings.queue_names()["learn"])
    finally:
        app.close()
    assert time.monotonic() - started < 15  # the publish retry policy allows about 1.5 s


# -- a real round trip ----------------------------------------------------------------


def test_a_task_routed_to_the_learn_queue_runs_on_a_worker_and_returns_through_the_backend(
    app: Celery, settings: WorkerSettings, redis_client: redis.Redis
) -> None:
    queues = settings.queue_names()

    def report(task: Any, payload: dict[str, Any]) -> dict[str, Any]:
        return {"payload": payload, "queue": task.request.delivery_info["routing_key"]}

    # shared=False: a shared task (Celery's default) is added to every app created
    # later in the process, and a second one of the same name warns (an error here).
    echo = app.task(name="tests.echo", bind=True, shared=False)(report)

    # The worker serves only the learn queue, so the task ran there or not at all.
    with start_worker(app, pool="threads", concurrency=2, queues=[queues["learn"]], perform_ping_check=False):
        result = echo.apply_async(({"question": "q", "n": 1},), queue=queues["learn"])
        assert result.get(timeout=10) == {"payload": {"question": "q", "n": 1}, "queue": queues["learn"]}

    stored = redis_client.get(f"celery-task-meta-{result.id}")
    assert stored is not None
    meta = json.loads(stored)  # the result backend holds JSON, not pickle
    assert meta["status"] == "SUCCESS"
    ttl = redis_client.ttl(f"celery-task-meta-{result.id}")
    assert 0 < ttl <= settings.result_ttl_seconds
