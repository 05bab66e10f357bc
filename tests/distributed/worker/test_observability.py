"""Metrics and structured logs of workers: real Redis (db 15), real in-process and subprocess workers."""

from __future__ import annotations

import io
import json
import logging
import os
import statistics
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis
from celery import signals
from prometheus_client.parser import text_string_to_metric_families
from typer.testing import CliRunner

from ace_workers.cli import app as cli_app
from ace_workers.core import UpdateBatch, UpdateOperation
from ace_workers.distributed import RedisSkillbookStore
from ace_workers.distributed.errors import InvalidSettingError
from ace_workers.distributed.service import Service, build_service, local_workers
from ace_workers.distributed.settings import WorkerSettings
from ace_workers.distributed.store.keys import dead_letters_key
from ace_workers.distributed.worker.celery_dispatch import PAYLOAD_ARGSREPR
from ace_workers.distributed.worker.celery_worker import leave_logging_alone, use_worker_logging
from ace_workers.distributed.worker.chains import STEP_TASK
from ace_workers.distributed.worker.payload import context_to_payload
from ace_workers.distributed.worker.task_logs import STEP_TASK_LOGGERS
from ace_workers.distributed.worker.tasks import run_step
from ace_workers.observability import (
    JsonFormatter,
    StepContextFilter,
    StepLogContext,
    WorkerMetrics,
    configure_logging,
    start_metrics_server,
    step_log_context,
)
from ace_workers.sim import failure_traces
from tests.support.cli import said
from tests.support.fixtures import connect_test_redis
from tests.support.hooked_redis import HookedRedis
from tests.support.processes import start_worker, stop, wait_until_served
from tests.support.recipes import TEST_RECIPES
from tests.support.servers import free_port
from tests.support.waiting import wait_for
from tests.support.workers import build_test_service

CHATTY = "chatty"
STEP_FIELDS = ("batch_id", "sample", "skillbook", "step")
# In every sample's question and answer: a log line holding it carries the sample's content.
PRIVATE = "zq-private-7731"


@pytest.fixture
def service(redis_client: redis.Redis, redis_url: str) -> Iterator[Service]:
    """In-process workers for the three queues; the runtime's metrics are the workers' metrics."""
    built = build_test_service(redis_url)
    with local_workers(built, learn_threads=4):
        yield built
    built.close()


@pytest.fixture
def quick_retry_service(redis_client: redis.Redis, redis_url: str) -> Iterator[Service]:
    built = build_test_service(redis_url, task_max_retries=3, retry_backoff_seconds=0.01)
    with local_workers(built, learn_threads=2):
        yield built
    built.close()


def fetch_metrics(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """GET /metrics over real HTTP: sample name and sorted labels -> value."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        text = response.read().decode()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


# -- metrics ------------------------------------------------------------------------------------------
def test_a_batch_counts_each_step_once_per_sample_with_latency_and_llm_tokens(service: Service) -> None:
    handle = service.producer.enqueue_traces(failure_traces(8), "metered")
    status = handle.wait(timeout=60)
    assert (status.done, status.failed) == (8, 0)
    metrics = service.runtime.metrics
    _, routes = service.runtime.pipeline("trace_analyser", "metered")
    assert [r.name for r in routes] == ["ReflectStep", "TagStep", "UpdateStep", "ApplyStep"]
    # A sample is recorded done inside its last step; the step's metrics follow as it returns.
    wait_for(
        lambda: metrics.value("ace_step_samples_total", step=routes[-1].name, skillbook="metered") == 8,
        timeout=10,
        what="the last step's metrics",
    )
    for route in routes:
        labels = {"step": route.name, "skillbook": "metered"}
        assert metrics.value("ace_step_samples_total", **labels) == 8, route.name
        assert metrics.value("ace_step_duration_seconds_count", step=route.name) == 8
        assert metrics.value("ace_step_duration_seconds_sum", step=route.name) > 0
    # The simulator reports token usage on each role output's raw, as the real clients do.
    for role in ("reflector", "skill_manager"):
        assert metrics.value("ace_llm_attempts_total", role=role, model="simulated") == 8
        for kind in ("prompt", "completion"):
            assert metrics.value("ace_llm_tokens_total", role=role, model="simulated", kind=kind) > 0
    assert metrics.value("ace_llm_attempts_total", role="agent", model="simulated") == 0
    # The store's metrics agree with its own counters in Redis.
    stats = service.runtime.store("metered").stats()
    assert stats["applies"] > 0
    assert metrics.value("ace_store_applies_total", skillbook="metered") == stats["applies"]
    assert metrics.value("ace_store_stale_applies_total", skillbook="metered") == stats["stale_applies"]
    assert metrics.value("ace_store_skipped_ops_total", skillbook="metered") == stats["skipped_ops"]
    assert metrics.value("ace_dead_letters_total", step="ApplyStep") == 0


def test_a_failing_step_counts_failures_by_exception_type_and_dead_letters(service: Service) -> None:
    handle = service.producer.enqueue_traces(failure_traces(3), "broken", recipe="failing")
    status = handle.wait(timeout=60)
    assert (status.done, status.failed) == (0, 3)
    metrics = service.runtime.metrics
    assert metrics.value("ace_step_failures_total", step="Explode", exception="RuntimeError") == 3
    assert metrics.value("ace_dead_letters_total", step="Explode") == 3
    assert metrics.value("ace_step_samples_total", step="Explode", skillbook="broken") == 0
    assert metrics.value("ace_step_duration_seconds_count", step="Explode") == 3
    assert service.runtime.redis.llen(dead_letters_key(service.runtime.settings.queue_prefix)) == 3


def test_retried_steps_count_as_failures_and_retries_then_as_samples(
    quick_retry_service: Service, redis_url: str
) -> None:
    traces = [{"id": f"m{i}", "redis_url": redis_url} for i in range(3)]
    handle = quick_retry_service.producer.enqueue_traces(traces, "retry", recipe="flaky")
    assert handle.wait(timeout=60).done == 3
    metrics = quick_retry_service.runtime.metrics
    # A sample is recorded done inside its last step; the step's metrics follow as it returns.
    wait_for(
        lambda: metrics.value("ace_step_samples_total", step="Flaky", skillbook="retry") == 3,
        timeout=10,
        what="the last step's metrics",
    )
    # Flaky fails twice per sample, then succeeds.
    assert metrics.value("ace_step_failures_total", step="Flaky", exception="LLMError") == 6
    assert metrics.value("ace_step_retries_total", step="Flaky") == 6
    assert metrics.value("ace_step_samples_total", step="Flaky", skillbook="retry") == 3
    assert metrics.value("ace_dead_letters_total", step="Flaky") == 0


def test_a_duplicate_apply_delivery_is_counted(service: Service) -> None:
    handle = service.producer.enqueue_traces(failure_traces(1), "once")
    handle.wait(timeout=60)
    metrics = service.runtime.metrics
    store = service.runtime.store("once")
    applies = metrics.value("ace_store_applies_total", skillbook="once")
    assert applies == store.stats()["applies"] > 0
    assert metrics.value("ace_store_duplicate_deliveries_total", skillbook="once") == 0
    _, routes = service.runtime.pipeline("trace_analyser", "once")
    apply_index = next(r.index for r in routes if r.name == "ApplyStep")
    (result,) = handle.results()
    assert result.output is not None
    payload = context_to_payload(result.output, claims=service.runtime.claims)
    kwargs = {
        "recipe": "trace_analyser",
        "skillbook": "once",
        "index": apply_index,
        "batch_id": handle.batch_id,
        "epoch": 1,
        "sample_index": 1,
    }
    run_step(service.dispatcher, payload, **kwargs)  # type: ignore[arg-type]
    run_step(service.dispatcher, payload, **kwargs)  # type: ignore[arg-type]
    assert metrics.value("ace_store_duplicate_deliveries_total", skillbook="once") == 2
    assert store.stats()["duplicate_deliveries"] == 2
    assert metrics.value("ace_store_applies_total", skillbook="once") == applies


def test_the_store_reports_conflicts_stale_applies_and_skipped_ops(
    redis_client: redis.Redis, redis_url: str
) -> None:
    metrics = WorkerMetrics()
    rival = RedisSkillbookStore(redis_client, "race")
    interfered: list[int] = []

    def rival_commits_first() -> None:
        if not interfered:
            interfered.append(rival.apply(UpdateBatch(operations=[add("Rival lesson")])).version)

    client = HookedRedis(connection_pool=connect_test_redis(redis_url).connection_pool)
    client.before_multi = rival_commits_first
    store = RedisSkillbookStore(client, "race", observer=metrics)
    try:
        store.apply(UpdateBatch(operations=[add("Our lesson")]), base_version=0)  # loses one race
        store.apply(
            UpdateBatch(
                operations=[UpdateOperation(type="TAG", skill_id="nope-00009", metadata={"helpful": 1})]
            ),
            base_version=1,
        )
    finally:
        client.connection_pool.disconnect()
    labels = {"skillbook": "race"}
    assert metrics.value("ace_store_conflicts_total", operation="apply", **labels) == 1
    assert metrics.value("ace_store_applies_total", **labels) == 2
    assert metrics.value("ace_store_stale_applies_total", **labels) == 2
    assert metrics.value("ace_store_skipped_ops_total", **labels) == 1
    # The rival store had no observer: only what this store did is counted, as in Redis minus the rival.
    stats = store.stats()
    assert (stats["conflicts"], stats["applies"], stats["stale_applies"], stats["skipped_ops"]) == (
        1,
        3,
        2,
        1,
    )


def add(content: str) -> UpdateOperation:
    return UpdateOperation(type="ADD", section="lessons", content=content)


def test_the_metrics_endpoint_serves_the_workers_registry_over_http(service: Service) -> None:
    handle = service.producer.enqueue_traces(failure_traces(4), "served")
    handle.wait(timeout=60)
    server = start_metrics_server(service.runtime.metrics, 0, host="127.0.0.1")
    try:
        served = fetch_metrics(server.port)
    finally:
        server.close()
    assert served[("ace_step_samples_total", (("skillbook", "served"), ("step", "ApplyStep")))] == 4
    assert served[("ace_step_duration_seconds_count", (("step", "ReflectStep"),))] == 4
    # A registry of its own: none of prometheus-client's default process collectors.
    assert not any(name.startswith("process_") or name.startswith("python_") for name, _ in served)


def test_two_runtimes_in_one_process_keep_separate_registries(
    redis_client: redis.Redis, redis_url: str
) -> None:
    first, second = build_test_service(redis_url), build_test_service(redis_url)
    try:
        assert first.runtime.metrics.registry is not second.runtime.metrics.registry
        first.runtime.metrics.observe_dead_letter("X")
        assert second.runtime.metrics.value("ace_dead_letters_total", step="X") == 0
    finally:
        first.close()
        second.close()


# -- logs ---------------------------------------------------------------------------------------------
@pytest.fixture
def json_log() -> Iterator[io.StringIO]:
    """A JSON handler on the root logger, as `--log-format json` installs it, capturing into a buffer."""
    buffer = io.StringIO()
    handler = logging.StreamHandler(buffer)
    handler.addFilter(StepContextFilter())
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield buffer
    finally:
        root.removeHandler(handler)


def test_a_line_logged_inside_a_step_carries_batch_sample_skillbook_and_step(
    service: Service, json_log: io.StringIO
) -> None:
    handle = service.producer.enqueue_traces([{"id": "a"}, {"id": "b"}], "chat", recipe=CHATTY)
    assert handle.wait(timeout=60).done == 2
    logging.getLogger("tests.observability.chatty").info("outside any step")
    lines = [json.loads(line) for line in json_log.getvalue().splitlines()]
    chatty = sorted(
        (line for line in lines if line["logger"] == "tests.observability.chatty"), key=lambda x: x["message"]
    )
    assert [line["message"] for line in chatty] == [
        "looked at trace a",
        "looked at trace b",
        "outside any step",
    ]
    for line, sample in zip(chatty, ("e1:1", "e1:2"), strict=False):
        assert line["batch_id"] == handle.batch_id
        assert line["sample"] == sample
        assert line["skillbook"] == "chat"
        assert line["step"] == "Chatty"
        assert line["level"] == "INFO"
        assert line["time"].endswith("+00:00")
    assert not {"batch_id", "sample", "skillbook", "step"} & chatty[-1].keys()


@pytest.fixture
def root_logging() -> Iterator[None]:
    """Puts back the root logger's handlers and level (pytest's capture among them) after the test."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        yield
    finally:
        logging.captureWarnings(False)
        for handler in list(root.handlers):
            root.removeHandler(handler)
        for handler in handlers:
            root.addHandler(handler)
        root.setLevel(level)


@pytest.mark.usefixtures("root_logging")
def test_the_json_formatter_writes_one_object_per_line_with_the_exception() -> None:
    buffer = io.StringIO()
    configure_logging("json", "DEBUG", stream=buffer)
    log = logging.getLogger("ace_workers.somewhere")
    with step_log_context(StepLogContext("b1", "e2:7", "book", "ReflectStep")):
        try:
            raise ValueError("bad\nvalue")
        except ValueError:
            log.exception("failed on %s", {"x": 1})
    (line,) = buffer.getvalue().splitlines()
    entry = json.loads(line)
    assert entry["message"] == "failed on {'x': 1}"
    assert entry["level"] == "ERROR"
    assert (entry["batch_id"], entry["sample"], entry["skillbook"], entry["step"]) == (
        "b1",
        "e2:7",
        "book",
        "ReflectStep",
    )
    assert "ValueError: bad" in entry["exception"]


@pytest.mark.usefixtures("root_logging")
def test_the_text_format_appends_the_step_fields_in_brackets() -> None:
    buffer = io.StringIO()
    configure_logging("text", "INFO", stream=buffer)
    log = logging.getLogger("ace_workers.somewhere")
    with step_log_context(StepLogContext("b1", "e2:7", "book", "ReflectStep")):
        log.info("inside")
    log.info("outside")
    inside, outside = buffer.getvalue().splitlines()
    assert inside.endswith(
        "ace_workers.somewhere: inside [batch_id=b1 sample=e2:7 skillbook=book step=ReflectStep]"
    )
    assert outside.endswith("ace_workers.somewhere: outside")


@dataclass
class WorkerLog:
    """What a worker logged: the lines as written, and each record with the thread that logged it."""

    buffer: io.StringIO
    records: list[logging.LogRecord]

    def lines(self) -> list[str]:
        return self.buffer.getvalue().splitlines()


class _KeepRecords(logging.Handler):
    def __init__(self, records: list[logging.LogRecord]) -> None:
        super().__init__()
        self.records = records

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def worker_log(root_logging: None) -> Iterator[WorkerLog]:
    """JSON logs at INFO as `ace-workers worker --log-format json` sets them up, into a buffer.

    The records are kept too, after the worker's handler tagged them, for the thread each came from.
    """
    log = WorkerLog(io.StringIO(), [])
    use_worker_logging("json", "INFO", stream=log.buffer)
    logging.getLogger().addHandler(_KeepRecords(log.records))
    try:
        yield log
    finally:
        signals.setup_logging.disconnect(leave_logging_alone)


def private_traces(redis_url: str) -> dict[str, list[dict[str, str]]]:
    """Traces by recipe, each with PRIVATE in its question and answer."""
    learned = failure_traces(4)
    for trace in learned:
        trace["question"] += f" ({PRIVATE})"
        trace["answer"] = f"{PRIVATE}: no idea"
    retried = [
        {"id": f"{uuid.uuid4().hex}", "redis_url": redis_url, "question": PRIVATE, "answer": PRIVATE}
        for _ in range(2)
    ]
    return {"trace_analyser": learned, "flaky": retried, "failing": learned[:2]}


def test_every_line_logged_while_steps_run_names_the_batch_sample_skillbook_and_step(
    redis_client: redis.Redis, redis_url: str, worker_log: WorkerLog
) -> None:
    service = build_test_service(redis_url, task_max_retries=3, retry_backoff_seconds=0.01)
    try:
        with local_workers(service, learn_threads=2):
            ends = {
                recipe: service.producer.enqueue_traces(traces, "logged", recipe=recipe).wait(timeout=60)
                for recipe, traces in private_traces(redis_url).items()
            }
    finally:
        service.close()
    assert (ends["trace_analyser"].done, ends["flaky"].done, ends["failing"].failed) == (4, 2, 2)
    # Celery's lines about each task, and whatever a pool thread logs (it only runs steps).
    while_running = [
        record
        for record in worker_log.records
        if record.name in STEP_TASK_LOGGERS or record.threadName.startswith("ThreadPoolExecutor")
    ]
    messages = [record.getMessage() for record in while_running]
    for kind in (" received", " succeeded in ", " retry: ", " raised unexpected: ", " failed for good: "):
        assert any(kind in message for message in messages), kind
    untagged = [
        (record.name, record.getMessage()[:120])
        for record in while_running
        if any(getattr(record, name, None) is None for name in STEP_FIELDS)
    ]
    assert untagged == []
    # As JSON fields, e.g. on every line Celery logs about a task.
    task_lines = [line for line in map(json.loads, worker_log.lines()) if line["logger"] in STEP_TASK_LOGGERS]
    assert task_lines
    assert all(set(STEP_FIELDS) <= line.keys() for line in task_lines)
    assert {line["sample"] for line in task_lines if line["skillbook"] == "logged"} >= {"e1:1", "e1:4"}


def test_no_line_carries_a_samples_content_and_a_typical_line_is_short(
    redis_client: redis.Redis, redis_url: str, worker_log: WorkerLog
) -> None:
    service = build_test_service(redis_url)
    try:
        with local_workers(service, learn_threads=2):
            handle = service.producer.enqueue_traces(private_traces(redis_url)["trace_analyser"], "short")
            assert handle.wait(timeout=60).done == 4
    finally:
        service.close()
    lines = worker_log.lines()
    assert len(lines) > 30  # received and succeeded for each of 4 steps of 4 samples, and more
    assert [line[:200] for line in lines if PRIVATE in line] == []
    lengths = [len(line) for line in lines]
    assert statistics.median(lengths) < 300
    assert statistics.mean(lengths) < 300


def test_log_format_is_a_setting_and_unknown_formats_fail() -> None:
    assert WorkerSettings.from_env({"ACE_LOG_FORMAT": "json"}).log_format == "json"
    assert WorkerSettings.from_env({}).log_format == "text"
    with pytest.raises(InvalidSettingError, match="ACE_LOG_FORMAT"):
        WorkerSettings.from_env({"ACE_LOG_FORMAT": "xml"})
    with pytest.raises(ValueError, match="unknown log format"):
        configure_logging("xml")


def test_the_worker_refuses_metrics_on_a_prefork_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACE_REDIS_URL", "redis://127.0.0.1:1/15")  # never reached: refused before
    result = CliRunner().invoke(cli_app, ["worker", "--pool", "prefork", "--metrics-port", "9999"])
    assert result.exit_code == 2
    assert "--metrics-port needs --pool threads or solo" in said(result.output)
    result = CliRunner().invoke(cli_app, ["worker", "--log-format", "xml"])
    assert result.exit_code == 2
    assert "use text or json" in said(result.output)


# -- a real worker process --------------------------------------------------------------------------


@pytest.mark.slow
def test_a_worker_process_serves_metrics_and_writes_json_logs(
    tmp_path: Path, redis_client: redis.Redis, redis_url: str
) -> None:
    prefix = f"ow{uuid.uuid4().hex[:6]}"
    port = free_port()
    values = {
        "ACE_REDIS_URL": redis_url,
        "ACE_QUEUE_PREFIX": prefix,
        "ACE_LOG_FORMAT": "json",
        "ACE_RECIPES": TEST_RECIPES,
    }
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path), **values}
    stdout, stderr = tmp_path / "stdout.log", tmp_path / "stderr.log"
    extra = (f"--metrics-port={port}",)
    worker = start_worker(env, stdout, queues="execute,learn,write", extra=extra, errors=stderr)
    service = build_service(WorkerSettings.from_env(values), redis_url=redis_url)
    try:

        def serving_metrics() -> bool:
            try:
                fetch_metrics(port)
            except OSError:
                assert worker.poll() is None, stderr.read_text()
                return False
            return True

        wait_for(serving_metrics, 30, "the worker's metrics endpoint", every=0.1, detail=stderr.read_text)
        handle = service.producer.enqueue_traces([{"id": "p1"}, {"id": "p2"}], "proc", recipe=CHATTY)
        assert handle.wait(timeout=60).done == 2
        # A sample is recorded done inside its last step; the step's metrics follow as it returns.
        samples = ("ace_step_samples_total", (("skillbook", "proc"), ("step", "Chatty")))
        wait_for(lambda: fetch_metrics(port).get(samples) == 2, timeout=10, what="the last step's metrics")
        served = fetch_metrics(port)
    finally:
        service.close()
        stop(worker)
    assert served[samples] == 2
    assert served[("ace_step_duration_seconds_count", (("step", "Chatty"),))] == 2
    # Celery's own logging did not replace ours: every line on stderr is a JSON object.
    lines = [json.loads(line) for line in stderr.read_text().splitlines() if line.strip()]
    assert any(line["logger"].startswith("celery") for line in lines)
    # Workers start without mingle (asking the others for revoked tasks, a second's wait) and gossip.
    assert [line["message"] for line in lines if line["logger"] == "celery.worker.consumer.mingle"] == []
    chatty = sorted(
        (x for x in lines if x["logger"] == "tests.observability.chatty"), key=lambda x: x["sample"]
    )
    assert [(x["message"], x["sample"]) for x in chatty] == [
        ("looked at trace p1", "e1:1"),
        ("looked at trace p2", "e1:2"),
    ]
    assert all(x["batch_id"] == handle.batch_id for x in chatty)
    assert all(x["skillbook"] == "proc" for x in chatty)
    assert all(x["step"] == "Chatty" for x in chatty)
    # Celery's received and succeeded lines name the step too.
    task_lines = [x for x in lines if x["logger"] in STEP_TASK_LOGGERS]
    assert len(task_lines) == 4
    assert all(
        (x["batch_id"], x["skillbook"], x["step"]) == (handle.batch_id, "proc", "Chatty") for x in task_lines
    )
    # No banner on stdout: Celery prints only its shutdown notice there, past any logging.
    assert stdout.read_text().split() in ([], ["worker:", "Warm", "shutdown", "(MainProcess)"])


@pytest.mark.slow
def test_a_worker_process_logging_text_appends_the_step_fields(
    tmp_path: Path, redis_client: redis.Redis, redis_url: str
) -> None:
    values = {
        "ACE_REDIS_URL": redis_url,
        "ACE_QUEUE_PREFIX": f"tw{uuid.uuid4().hex[:6]}",
        "ACE_RECIPES": TEST_RECIPES,
    }  # no ACE_LOG_FORMAT: text is the default
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path), **values}
    stdout, stderr = tmp_path / "stdout.log", tmp_path / "stderr.log"
    worker = start_worker(env, stdout, queues="execute,learn,write", errors=stderr)
    service = build_service(WorkerSettings.from_env(values), redis_url=redis_url)
    try:
        wait_until_served(service, ["execute", "learn", "write"])
        handle = service.producer.enqueue_traces([{"id": "t1"}], "text", recipe=CHATTY)
        assert handle.wait(timeout=60).done == 1, stderr.read_text()
        fields = f"[batch_id={handle.batch_id} sample=e1:1 skillbook=text step=Chatty]"
        wait_for(lambda: " succeeded in " in stderr.read_text(), timeout=10, what="the succeeded line")
    finally:
        service.close()
        stop(worker)
    lines = stderr.read_text().splitlines()
    tagged = [line for line in lines if line.endswith(fields)]
    assert [line.split("] ", 1)[1] for line in tagged if "chatty" in line] == [
        f"tests.observability.chatty: looked at trace t1 {fields}"
    ]
    assert any(" received " in line and "celery.worker.strategy" in line for line in tagged)
    assert any(" succeeded in " in line and "celery.app.trace" in line for line in tagged)


def test_in_process_workers_log_a_failed_sample_without_celerys_traceback(
    service: Service, caplog: pytest.LogCaptureFixture
) -> None:
    # The fleet behind `learn` and the demo logs to the user's terminal: a wrong model failing
    # every sample once printed a 30-line traceback per sample.
    with caplog.at_level(logging.ERROR):  # the fixture's workers run in this process
        handle = service.producer.enqueue_traces(failure_traces(3), "book", recipe="failing")
        status = handle.wait(timeout=60)
    assert status.failed == 3

    def celerys_lines() -> list[str]:
        records = [r for r in caplog.records if r.name == "celery.app.trace"]
        return [r.getMessage() for r in records if r.levelno >= logging.ERROR]

    # The ledger counts a failure before Celery's own line about it is logged: wait for the last.
    wait_for(lambda: len(celerys_lines()) >= 3, timeout=10, what="Celery's three failure lines")
    failures = [r for r in caplog.records if r.levelno >= logging.ERROR]
    ours = [r.getMessage() for r in failures if r.name == "ace_workers.distributed.worker.tasks"]
    celerys = celerys_lines()
    assert ours == ["Explode failed for good: RuntimeError: boom on purpose"] * 3
    assert len(celerys) == 3
    assert all(" raised unexpected: RuntimeError('boom on purpose')" in message for message in celerys)
    assert all(r.exc_info is None and r.exc_text is None for r in failures)


def test_no_step_message_carries_a_repr_of_its_payload(redis_url: str) -> None:
    """Every step message, the producer's first and each one a worker sends on, shows its arguments
    as PAYLOAD_ARGSREPR: its headers (and the task events Flower shows) hold no part of the sample."""
    shown: list[object] = []

    def record(headers: dict[str, object] | None = None, **_: object) -> None:
        if headers is not None and headers.get("task") == STEP_TASK:
            shown.append(headers.get("argsrepr"))

    service = build_test_service(redis_url)
    signals.before_task_publish.connect(record, weak=False)
    try:
        with local_workers(service, learn_threads=2):
            handle = service.producer.enqueue_traces(private_traces(redis_url)["trace_analyser"], "shown")
            assert handle.wait(timeout=60).done == 4
    finally:
        signals.before_task_publish.disconnect(record)
        service.close()
    steps = len(service.runtime.routes(handle.status().recipe))
    assert len(shown) == 4 * steps  # each step of each sample, sent once
    assert set(shown) == {PAYLOAD_ARGSREPR}
