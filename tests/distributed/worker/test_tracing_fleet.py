"""Tracing across workers: a sample is one trace, whichever workers, queues and deliveries run its steps."""

from __future__ import annotations

import gzip
import os
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import redis
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from ace_workers.distributed import WorkerSettings
from ace_workers.distributed.service import Service, build_service, local_workers
from ace_workers.sim import failure_traces
from tests.support.processes import start_worker, stop, wait_until_served
from tests.support.recipes import TEST_RECIPES
from tests.support.tracing import by_trace, memory_spans, named, parent_id, span_id, trace_id
from tests.support.waiting import wait_for
from tests.support.workers import running_service

TIMEOUT = 60
LEARNING_STEPS = ["ReflectStep", "TagStep", "UpdateStep", "ApplyStep"]


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """Every span of the test: producer and in-process workers share the process, and so the exporter."""
    with memory_spans() as exporter:
        yield exporter


def wait_for_spans(spans: InMemorySpanExporter, name: str, count: int) -> list[ReadableSpan]:
    """Every finished span, once ``count`` spans named ``name`` have finished.

    (A task ends its step's span after it recorded the sample, so a batch can be done first.)
    """
    wait_for(
        lambda: len(named(list(spans.get_finished_spans()), name)) >= count,
        TIMEOUT,
        f"{count} spans named {name}",
        every=0.05,
        detail=lambda: [span.name for span in spans.get_finished_spans()],
    )
    return list(spans.get_finished_spans())


def steps_in_order(spans: list[ReadableSpan]) -> list[ReadableSpan]:
    return sorted(named(spans, "ace.step "), key=lambda span: span.start_time or 0)


def test_a_sample_learned_by_the_fleet_is_one_trace(
    redis_url: str, redis_client: redis.Redis, spans: InMemorySpanExporter
) -> None:
    with running_service(redis_url) as service:
        handle = service.producer.enqueue_traces(failure_traces(3), "traced")
        assert handle.wait(timeout=TIMEOUT).done == 3
        finished = wait_for_spans(spans, "ace.step ApplyStep", 3)

    samples = named(finished, "ace.sample")
    assert len(samples) == 3
    assert len({trace_id(span) for span in samples}) == 3
    assert set(by_trace(finished)) == {trace_id(span) for span in samples}


def test_every_step_of_a_sample_is_a_span_below_the_sample_the_producer_sent(
    redis_url: str, redis_client: redis.Redis, spans: InMemorySpanExporter
) -> None:
    with running_service(redis_url) as service:
        handle = service.producer.enqueue_traces(failure_traces(2), "traced")
        handle.wait(timeout=TIMEOUT)
        finished = wait_for_spans(spans, "ace.step ApplyStep", 2)

    for spans_of_trace in by_trace(finished).values():
        (sample,) = named(spans_of_trace, "ace.sample")
        assert sample.kind is SpanKind.PRODUCER
        assert sample.attributes["ace.batch_id"] == handle.batch_id  # type: ignore[index]
        assert sample.attributes["ace.recipe"] == "trace_analyser"  # type: ignore[index]
        steps = steps_in_order(spans_of_trace)
        assert [span.name.removeprefix("ace.step ") for span in steps] == LEARNING_STEPS
        assert {parent_id(span) for span in steps} == {span_id(sample)}
        assert [span.attributes["ace.step.index"] for span in steps] == [0, 1, 2, 3]  # type: ignore[index]


def test_a_sample_whose_steps_ran_on_two_workers_is_still_one_trace(
    redis_url: str, redis_client: redis.Redis, spans: InMemorySpanExporter
) -> None:
    with running_service(redis_url) as service:
        service.producer.enqueue_traces(failure_traces(1), "traced").wait(timeout=TIMEOUT)
        finished = wait_for_spans(spans, "ace.step ApplyStep", 1)

    steps = {span.name: span for span in named(finished, "ace.step ")}
    queues = service.runtime.settings.queue_names()
    # The write queue has a worker of its own (one thread), apart from the execute/learn worker.
    assert steps["ace.step ReflectStep"].attributes["messaging.destination.name"] == queues["learn"]  # type: ignore[index]
    assert steps["ace.step ApplyStep"].attributes["messaging.destination.name"] == queues["write"]  # type: ignore[index]
    assert len({trace_id(span) for span in steps.values()}) == 1


def test_llm_calls_on_workers_are_spans_below_their_step(
    redis_url: str, redis_client: redis.Redis, spans: InMemorySpanExporter
) -> None:
    with running_service(redis_url) as service:
        service.producer.enqueue_traces(failure_traces(1), "traced").wait(timeout=TIMEOUT)
        finished = wait_for_spans(spans, "ace.step ApplyStep", 1)

    names = {span_id(span): span.name for span in named(finished, "ace.step ")}
    calls = named(finished, "chat ")
    assert sorted(names[parent_id(call)] for call in calls) == ["ace.step ReflectStep", "ace.step UpdateStep"]  # type: ignore[index]
    assert all(call.attributes["gen_ai.usage.input_tokens"] > 0 for call in calls)  # type: ignore[index, operator]


def test_a_retried_step_is_two_spans_in_the_trace_of_its_sample(
    redis_url: str, redis_client: redis.Redis, spans: InMemorySpanExporter
) -> None:
    with running_service(redis_url, retry_backoff_seconds=0.01) as service:
        trace = {"id": f"flaky-{uuid.uuid4().hex[:6]}", "redis_url": redis_url}
        service.producer.enqueue_traces([trace], "traced", recipe="flaky").wait(timeout=TIMEOUT)
        finished = wait_for_spans(spans, "ace.step Flaky", 3)

    (sample,) = named(finished, "ace.sample")
    attempts = named(finished, "ace.step Flaky")
    assert {parent_id(span) for span in attempts} == {span_id(sample)}
    assert sorted(span.attributes["celery.retries"] for span in attempts) == [0, 1, 2]  # type: ignore[index]
    assert [
        span.status.status_code for span in sorted(attempts, key=lambda s: s.attributes["celery.retries"])
    ] == [  # type: ignore[index]
        StatusCode.ERROR,
        StatusCode.ERROR,
        StatusCode.UNSET,
    ]


def test_a_sample_sent_again_by_the_reconciler_stays_in_its_trace(
    redis_url: str, redis_client: redis.Redis, spans: InMemorySpanExporter
) -> None:
    settings = WorkerSettings(
        redis_url=redis_url,
        queue_prefix=f"t{uuid.uuid4().hex[:8]}",
        sim_trust_threshold=0,
        recipes=TEST_RECIPES,
        visibility_timeout_seconds=1,
        retry_backoff_seconds=0.01,
        task_max_retries=1,
        reconcile_interval_seconds=0.2,
    )
    service: Service = build_service(settings, redis_url=redis_url)
    try:
        handle = service.producer.enqueue_traces(failure_traces(1), "traced")
        # The broker loses the message: the waiting producer's reconciler sends the sample again.
        assert redis_client.rpop(service.runtime.queue("learn")) is not None
        with local_workers(service):
            assert handle.wait(timeout=TIMEOUT).done == 1
            finished = wait_for_spans(spans, "ace.step ApplyStep", 1)
        assert list(service.runtime.batches.redrives(handle.batch_id).values()) == [1]
    finally:
        service.close()

    (sample,) = named(finished, "ace.sample")
    steps = named(finished, "ace.step ")
    assert len(steps) == len(LEARNING_STEPS)
    assert {parent_id(span) for span in steps} == {span_id(sample)}
    assert {trace_id(span) for span in steps} == {trace_id(sample)}


# -- worker processes exporting over OTLP/HTTP (the real --otlp-endpoint path) -------------------------


@dataclass(frozen=True)
class ExportedSpan:
    """One span as a collector received it."""

    service: str
    name: str
    trace_id: int
    span_id: int
    parent_id: int | None


class Collector(ThreadingHTTPServer):
    """A local OTLP/HTTP collector: decodes every ExportTraceServiceRequest posted to /v1/traces."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _CollectorHandler)
        self.spans: list[ExportedSpan] = []
        self.paths: list[str] = []
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def received(self) -> list[ExportedSpan]:
        with self.lock:
            return list(self.spans)


class _CollectorHandler(BaseHTTPRequestHandler):
    server: Collector

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        request = ExportTraceServiceRequest.FromString(body)
        received = [
            ExportedSpan(
                service=next(a.value.string_value for a in rs.resource.attributes if a.key == "service.name"),
                name=span.name,
                trace_id=int.from_bytes(span.trace_id, "big"),
                span_id=int.from_bytes(span.span_id, "big"),
                parent_id=int.from_bytes(span.parent_span_id, "big") if span.parent_span_id else None,
            )
            for rs in request.resource_spans
            for ss in rs.scope_spans
            for span in ss.spans
        ]
        with self.server.lock:
            self.server.spans += received
            self.server.paths.append(self.path)
        answer = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the test reads what was received, not the access log."""


@pytest.fixture
def collector() -> Iterator[Collector]:
    server = Collector()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.slow
def test_worker_processes_export_the_steps_of_a_sample_to_the_otlp_endpoint_in_its_trace(
    redis_url: str,
    redis_client: redis.Redis,
    spans: InMemorySpanExporter,
    collector: Collector,
    tmp_path: Path,
) -> None:
    prefix = f"t{uuid.uuid4().hex[:8]}"
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "ACE_REDIS_URL": redis_url,
        "ACE_QUEUE_PREFIX": prefix,
        "ACE_SIM_TRUST_THRESHOLD": "0",
        "OTEL_BSP_SCHEDULE_DELAY": "100",  # export every 0.1 s rather than every 5 s
    }
    otlp = (f"--otlp-endpoint={collector.url}",)
    workers = [
        start_worker(env, tmp_path / "learn.log", queues="execute,learn", extra=otlp),
        start_worker(env, tmp_path / "write.log", queues="write", extra=otlp),
    ]
    service = build_service(WorkerSettings(redis_url=redis_url, queue_prefix=prefix), redis_url=redis_url)
    try:
        wait_until_served(service, ["learn", "write"])
        handle = service.producer.enqueue_traces(failure_traces(1), "exported")
        assert handle.wait(timeout=TIMEOUT).done == 1, (tmp_path / "learn.log").read_text()
        wait_for(
            lambda: len(collector.received()) >= len(LEARNING_STEPS) + 2,
            TIMEOUT,
            "the steps' and the two LLM calls' spans at the collector",
            every=0.1,
            detail=lambda: [span.name for span in collector.received()],
        )
    finally:
        service.close()
        stop(*workers)

    (sample,) = named(list(spans.get_finished_spans()), "ace.sample")  # the producer's, in this process
    steps = {span.name: span for span in collector.received() if span.name.startswith("ace.step ")}
    assert sorted(steps) == sorted(f"ace.step {name}" for name in LEARNING_STEPS)
    assert {span.trace_id for span in steps.values()} == {trace_id(sample)}
    assert {span.parent_id for span in steps.values()} == {span_id(sample)}
    assert steps["ace.step ReflectStep"].service == "ace-workers-execute-learn"
    assert steps["ace.step ApplyStep"].service == "ace-workers-write"
    assert set(collector.paths) == {"/v1/traces"}
