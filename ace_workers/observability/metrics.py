"""Prometheus metrics of a worker process: steps, LLM usage, the skillbook store, dead letters.

Each :class:`WorkerMetrics` owns a CollectorRegistry of its own (not
prometheus-client's process-wide default), so several runtimes in one process
(tests, benchmarks) never share or clash over counters. A worker exports its
runtime's registry with :func:`start_metrics_server`.

Metrics need one process per registry: with Celery's prefork pool every child
would count into its own registry and the parent's endpoint would show none of
it, so ``ace-workers worker --metrics-port`` accepts the threads and solo pools only.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from socketserver import ThreadingMixIn
from typing import TYPE_CHECKING, Any, Protocol
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, Counter, Histogram, make_wsgi_app

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment

__all__ = [
    "LLM_OUTPUT_ROLES",
    "LLMUsage",
    "llm_usage",
    "new_llm_calls",
    "METRIC_NAMES",
    "AppliedBatch",
    "MetricsServer",
    "WorkerMetrics",
    "start_metrics_server",
]

logger = logging.getLogger(__name__)

# Step context field holding a role's output -> the role's name in the metrics.
LLM_OUTPUT_ROLES: Mapping[str, str] = {
    "agent_output": "agent",
    "reflection": "reflector",
    "skill_manager_output": "skill_manager",
}
# Token kinds a provider reports (LLMResponse.usage's keys without the total, which is their sum).
_TOKEN_KINDS = ("prompt_tokens", "completion_tokens")
# LLM steps take seconds, bookkeeping steps a millisecond: buckets cover both.
_DURATION_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)

# The exported names (counters with the _total suffix Prometheus adds), for docs and tests.
METRIC_NAMES = (
    "ace_step_samples_total",
    "ace_step_failures_total",
    "ace_step_retries_total",
    "ace_step_duration_seconds",
    "ace_dead_letters_total",
    "ace_redrives_total",
    "ace_llm_tokens_total",
    "ace_llm_attempts_total",
    "ace_llm_cost_usd_total",
    "ace_store_applies_total",
    "ace_store_stale_applies_total",
    "ace_store_skipped_ops_total",
    "ace_store_duplicate_deliveries_total",
    "ace_store_conflicts_total",
)


class AppliedBatch(Protocol):
    """What the metrics read from a store's apply result (StoreApplyResult fits)."""

    @property
    def stale(self) -> bool:
        """The batch was computed on an older version."""
        ...

    @property
    def duplicate_delivery(self) -> bool:
        """The batch had been applied before under the same idempotency key."""
        ...

    @property
    def report(self) -> Any:
        """The ApplyReport; its ``skipped_ops`` and ``full`` are read."""
        ...


def new_llm_calls(before: object, after: object) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """(role, raw provider metadata) of each role output on ``after`` but not on ``before`` that has one."""
    for field, role in LLM_OUTPUT_ROLES.items():
        output = getattr(after, field, None)
        if output is None or output is getattr(before, field, None):
            continue
        raw = getattr(output, "raw", None)
        if raw:
            yield role, raw


@dataclass(frozen=True)
class LLMUsage:
    """Tokens a step's LLM calls used, and their cost in USD where the provider priced one (else None)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None


def llm_usage(before: object, after: object) -> LLMUsage:
    """The summed usage of the role outputs a step produced: what observe_llm_outputs counts."""
    prompt = completion = 0
    cost: float | None = None
    for _, raw in new_llm_calls(before, after):
        usage = raw.get("usage") or {}
        prompt += _tokens(usage.get("prompt_tokens"))
        completion += _tokens(usage.get("completion_tokens"))
        priced = raw.get("cost")
        if isinstance(priced, int | float) and not isinstance(priced, bool) and priced > 0:
            cost = (cost or 0.0) + float(priced)
    return LLMUsage(prompt, completion, cost)


def _tokens(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


class WorkerMetrics:
    """The metrics of one worker process, in a registry of their own.

    Also the store's observer (``on_conflict``, ``on_apply``): the store calls
    it where it learns of a lost race or of what an apply did.
    """

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry(auto_describe=True)
        r = self.registry
        self.step_samples = Counter(
            "ace_step_samples",
            "Samples a step finished, by step and skillbook.",
            ["step", "skillbook"],
            registry=r,
        )
        self.step_failures = Counter(
            "ace_step_failures",
            "Step runs that raised, retried ones included, by step and exception type.",
            ["step", "exception"],
            registry=r,
        )
        self.step_retries = Counter(
            "ace_step_retries", "Step runs sent back to their queue for a retry.", ["step"], registry=r
        )
        self.step_duration = Histogram(
            "ace_step_duration_seconds",
            "Wall time of one step run on a worker, failed ones included.",
            ["step"],
            buckets=_DURATION_BUCKETS,
            registry=r,
        )
        self.dead_letters = Counter(
            "ace_dead_letters",
            "Samples parked in the dead-letter list, by failed step.",
            ["step"],
            registry=r,
        )
        self.redrives = Counter(
            "ace_redrives",
            "Samples the reconciler sent again after they made no progress, by skillbook.",
            ["skillbook"],
            registry=r,
        )
        self.llm_tokens = Counter(
            "ace_llm_tokens",
            "LLM tokens the provider reported, by role, model and kind (prompt or completion).",
            ["role", "model", "kind"],
            registry=r,
        )
        self.llm_attempts = Counter(
            "ace_llm_attempts",
            "LLM requests made, re-asks included, by role and model.",
            ["role", "model"],
            registry=r,
        )
        self.llm_cost = Counter(
            "ace_llm_cost_usd",
            "LLM cost in USD where the provider priced the call.",
            ["role", "model"],
            registry=r,
        )
        self.store_applies = Counter(
            "ace_store_applies", "Update batches applied as a new version.", ["skillbook"], registry=r
        )
        self.store_stale_applies = Counter(
            "ace_store_stale_applies",
            "Applies rebased onto a newer version than the one they were computed on.",
            ["skillbook"],
            registry=r,
        )
        self.store_skipped_ops = Counter(
            "ace_store_skipped_ops",
            "Operations an apply skipped (unknown ids, restated skills).",
            ["skillbook"],
            registry=r,
        )
        self.store_adds_skipped_full = Counter(
            "ace_store_adds_skipped_full",
            "ADD operations left out because the skillbook was at ACE_MAX_SKILLBOOK_SKILLS.",
            ["skillbook"],
            registry=r,
        )
        self.store_duplicate_deliveries = Counter(
            "ace_store_duplicate_deliveries",
            "Applies found already applied under their idempotency key, so not applied again.",
            ["skillbook"],
            registry=r,
        )
        self.store_conflicts = Counter(
            "ace_store_conflicts",
            "Store writes that lost a compare-and-set race and were retried.",
            ["skillbook", "operation"],
            registry=r,
        )

    # -- steps -------------------------------------------------------------------------------
    @contextmanager
    def timed_step(self, step: str, skillbook: str) -> Iterator[None]:
        """Count the step run inside the block: a finished sample, or a failure if it raises."""
        started = time.perf_counter()
        try:
            yield
        except BaseException as exc:
            self.observe_step(step, skillbook, time.perf_counter() - started, exc)
            raise
        self.observe_step(step, skillbook, time.perf_counter() - started, None)

    def observe_step(self, step: str, skillbook: str, seconds: float, error: BaseException | None) -> None:
        """Count one step run: its duration, and a finished sample or a failure by exception type."""
        self.step_duration.labels(step).observe(seconds)
        if error is None:
            self.step_samples.labels(step, skillbook).inc()
        else:
            self.step_failures.labels(step, type(error).__name__).inc()

    def observe_retry(self, step: str) -> None:
        """Count a step run sent back for a retry."""
        self.step_retries.labels(step).inc()

    def observe_dead_letter(self, step: str) -> None:
        """Count a sample parked in the dead-letter list."""
        self.dead_letters.labels(step).inc()

    def observe_redrive(self, skillbook: str) -> None:
        """Count a sample the reconciler sent again."""
        self.redrives.labels(skillbook).inc()

    def observe_llm_outputs(self, before: object, after: object) -> None:
        """Count the LLM usage of the role outputs a step produced (those on ``after`` but not ``before``).

        Reads what the client put on each output's ``raw`` (model, usage, cost,
        attempts; see providers/instructor_client.py and the simulator); an
        output without it (a fake, an output carried over from a message) adds nothing.
        """
        for role, raw in new_llm_calls(before, after):
            self.observe_llm_call(role, raw)

    def observe_llm_call(self, role: str, raw: Mapping[str, Any]) -> None:
        """Count one role call's provider metadata: tokens by kind, attempts, and cost when priced."""
        model = str(raw.get("model") or "unknown")
        usage = raw.get("usage") or {}
        for kind in _TOKEN_KINDS:
            tokens = usage.get(kind) or 0
            if tokens > 0:
                self.llm_tokens.labels(role, model, kind.removesuffix("_tokens")).inc(tokens)
        attempts = raw.get("attempts") or 1
        self.llm_attempts.labels(role, model).inc(attempts)
        cost = raw.get("cost")
        if cost is not None and cost > 0:
            self.llm_cost.labels(role, model).inc(cost)

    # -- the store's observer --------------------------------------------------------------------
    def on_conflict(self, skillbook: str, operation: str) -> None:
        """A store write lost a compare-and-set race (the store retries it or gives up)."""
        self.store_conflicts.labels(skillbook, operation).inc()

    def on_apply(self, skillbook: str, result: AppliedBatch) -> None:
        """An apply finished; a duplicate delivery counts as that alone, as the store's own counters do."""
        if result.duplicate_delivery:
            self.store_duplicate_deliveries.labels(skillbook).inc()
            return
        self.store_applies.labels(skillbook).inc()
        if result.stale:
            self.store_stale_applies.labels(skillbook).inc()
        skipped = result.report.skipped_ops
        if skipped:
            self.store_skipped_ops.labels(skillbook).inc(skipped)
        full = len(result.report.full)
        if full:
            self.store_adds_skipped_full.labels(skillbook).inc(full)

    def value(self, name: str, **labels: str) -> float:
        """The current value of one sample (e.g. ``"ace_step_samples_total"``), 0.0 if never set."""
        found = self.registry.get_sample_value(name, labels)
        return 0.0 if found is None else found


class MetricsServer:
    """A running /metrics HTTP endpoint; ``port`` is the one bound (useful when asked for port 0)."""

    def __init__(self, server: WSGIServer, thread: threading.Thread) -> None:
        self._server = server
        self._thread = thread

    @property
    def port(self) -> int:
        """The TCP port the endpoint listens on."""
        return int(self._server.server_port)

    def close(self) -> None:
        """Stop serving and release the port."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


# A liveness answer: a JSON-able dict whose "healthy" says whether the process should live on.
Health = Callable[[], Mapping[str, Any]]


def start_metrics_server(
    metrics: WorkerMetrics, port: int, host: str = "0.0.0.0", health: Health | None = None
) -> MetricsServer:
    """Serve ``metrics`` at /metrics and ``health`` at /healthz (200 or 503) on ``host:port``.

    From daemon threads; port 0 takes any free port.
    """
    server = make_server(
        host, port, _routes(make_wsgi_app(metrics.registry), health), _ThreadingServer, _QuietHandler
    )
    thread = threading.Thread(target=server.serve_forever, name="ace-metrics", daemon=True)
    thread.start()
    served = MetricsServer(server, thread)
    logger.info("serving Prometheus metrics on http://%s:%d/metrics", host, served.port)
    return served


def _routes(metrics_app: WSGIApplication, health: Health | None) -> WSGIApplication:
    def app(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        if environ.get("PATH_INFO") == "/healthz" and health is not None:
            answer = dict(health())
            body = json.dumps(answer).encode()
            status = "200 OK" if answer.get("healthy") else "503 Service Unavailable"
            start_response(status, [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
            return [body]
        return metrics_app(environ, start_response)

    return app


class _ThreadingServer(ThreadingMixIn, WSGIServer):
    """One thread per request, so a slow scrape never blocks a probe."""

    daemon_threads = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """Scrapes and probes every few seconds would flood stderr."""
