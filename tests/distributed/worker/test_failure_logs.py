"""A failed step is one line in a worker's log: its traceback once per batch and error kind, at DEBUG.

An unreachable provider once logged 1,293 lines for 4 samples (24 tracebacks of some 240 lines,
and litellm's own lines twice over).
"""

from __future__ import annotations

import logging
import os
import re
import uuid
from pathlib import Path

import pytest
import redis

from ace_workers.distributed.service import Service, build_service, local_workers
from ace_workers.distributed.settings import WorkerSettings
from ace_workers.distributed.worker.failure_logs import FirstFailures, failure_line
from ace_workers.sim import failure_traces
from tests.support.processes import start_worker, stop, wait_until_served
from tests.support.servers import free_port
from tests.support.waiting import wait_for
from tests.support.workers import build_test_service

SAMPLES = 4
# What a text line starts with: "[2026-06-01 12:00:00,123: LEVEL/MainProcess] logger: ..."
LINE_START = re.compile(r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}: (\w+)/")


@pytest.mark.slow
def test_a_worker_whose_provider_is_unreachable_logs_a_handful_of_single_lines_per_failure(
    tmp_path: Path, redis_client: redis.Redis, redis_url: str
) -> None:
    closed = free_port()  # nobody listens there: every call meets "connection refused"
    values = {
        "ACE_REDIS_URL": redis_url,
        "ACE_QUEUE_PREFIX": f"fl{uuid.uuid4().hex[:6]}",
        "ACE_REFLECTOR_MODEL": "openai/gpt-4o-mini",
        "ACE_SKILL_MANAGER_MODEL": "openai/gpt-4o-mini",
        "ACE_TASK_MAX_RETRIES": "1",  # one retry of each step: the retry's lines count too
        "ACE_RETRY_BACKOFF_SECONDS": "0.1",
    }
    provider = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": f"http://127.0.0.1:{closed}/v1"}
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path), **values, **provider}
    stdout, stderr = tmp_path / "stdout.log", tmp_path / "stderr.log"
    worker = start_worker(env, stdout, queues="learn", concurrency=SAMPLES, errors=stderr)
    service = build_service(WorkerSettings.from_env(values), redis_url=redis_url)
    try:
        wait_until_served(service, ["learn"])
        handle = service.producer.enqueue_traces(failure_traces(SAMPLES), "down")
        wait_for(lambda: handle.status().failed == SAMPLES, 180, "every sample to fail", every=0.2)
        wait_for(lambda: stderr.read_text().count(" raised unexpected: ") == SAMPLES, 10, "Celery's lines")
    finally:
        service.close()
        stop(worker)
    lines = stderr.read_text().splitlines()
    ready = next(i for i, line in enumerate(lines) if line.endswith(" ready."))
    logged = lines[ready + 1 :]
    assert "Traceback" not in stderr.read_text()
    # Every line is a record of its own: no traceback, no message of several lines.
    assert [line for line in logged if not LINE_START.match(line)] == []
    assert [line for line in logged if "LiteLLM" in line] == []
    ours = [line for line in logged if " failed for good: " in line]
    assert len(ours) == SAMPLES
    for index in range(1, SAMPLES + 1):
        about = [line for line in logged if f" sample=e1:{index} " in line]
        # Per delivery: Celery's "received", ours (a retry, or the failure), Celery's "retry"/"raised".
        assert len(about) <= 6, "\n".join(about)
        (failure,) = [line for line in about if " failed for good: " in line]
        assert LINE_START.match(failure).group(1) == "ERROR"  # type: ignore[union-attr]
        assert "ReflectStep failed for good: LLMError: every model failed (openai/gpt-4o-mini)" in failure
        assert "Connection error" in failure  # the cause
        assert failure.endswith(
            f"[batch_id={handle.batch_id} sample=e1:{index} skillbook=down step=ReflectStep]"
        )


def _failing_service(redis_url: str, **settings: object) -> Service:
    return build_test_service(redis_url, task_max_retries=0, **settings)


def test_the_traceback_of_a_failed_step_is_logged_once_per_batch_and_error_kind_at_debug(
    redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    service = _failing_service(redis_url)
    try:
        with local_workers(service, learn_threads=2), caplog.at_level(logging.DEBUG):
            first = service.producer.enqueue_traces(failure_traces(3), "book", recipe="failing")
            assert first.wait(timeout=60).failed == 3
            second = service.producer.enqueue_traces(failure_traces(2), "book", recipe="failing")
            assert second.wait(timeout=60).failed == 2
    finally:
        service.close()
    tasks = [r for r in caplog.records if r.name == "ace_workers.distributed.worker.tasks"]
    traced = [r for r in tasks if r.exc_info is not None]
    assert [r.levelno for r in traced] == [logging.DEBUG, logging.DEBUG]  # one per batch
    assert {r.getMessage() for r in traced} == {
        "traceback of Explode (RuntimeError), logged once per batch and error kind"
    }
    assert all(r.exc_info is None for r in caplog.records if r.levelno >= logging.INFO)


def test_log_tracebacks_keeps_celerys_traceback_on_every_failure(
    redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    service = _failing_service(redis_url, log_tracebacks=True)
    try:
        with local_workers(service, learn_threads=2), caplog.at_level(logging.ERROR):
            handle = service.producer.enqueue_traces(failure_traces(3), "book", recipe="failing")
            assert handle.wait(timeout=60).failed == 3

            def raised() -> list[logging.LogRecord]:
                return [
                    r for r in caplog.records if r.name == "celery.app.trace" and r.levelno >= logging.ERROR
                ]

            wait_for(lambda: len(raised()) == 3, timeout=10, what="Celery's three failure lines")
    finally:
        service.close()
    assert all(r.exc_info is not None for r in raised())


def test_log_tracebacks_is_a_documented_setting() -> None:
    assert WorkerSettings.from_env({"ACE_LOG_TRACEBACKS": "1"}).log_tracebacks is True
    assert WorkerSettings.from_env({}).log_tracebacks is False
    field = WorkerSettings.__dataclass_fields__["log_tracebacks"]
    assert "traceback" in field.metadata["help"]


def test_a_failure_line_is_one_line_with_its_cause_when_the_cause_adds_something() -> None:
    try:
        try:
            raise ConnectionRefusedError("[Errno 111] Connection refused")
        except ConnectionRefusedError as cause:
            raise RuntimeError("the provider did not answer\nat all") from cause
    except RuntimeError as error:
        line = failure_line(error)
    assert line == (
        "RuntimeError: the provider did not answer at all "
        "(cause: ConnectionRefusedError: [Errno 111] Connection refused)"
    )
    repeated = ValueError("bad: boom")
    repeated.__cause__ = RuntimeError("boom")
    assert failure_line(repeated) == "ValueError: bad: boom"  # the cause's text is in the message


def test_first_failures_says_first_once_per_batch_and_error_class() -> None:
    first = FirstFailures()
    assert first.is_first("b1", RuntimeError("x")) is True
    assert first.is_first("b1", RuntimeError("y")) is False
    assert first.is_first("b1", ValueError("x")) is True
    assert first.is_first("b2", RuntimeError("x")) is True
