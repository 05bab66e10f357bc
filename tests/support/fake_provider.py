"""A loopback stand-in for an OpenAI-compatible provider with a fixed capacity, and a storm to throw at it.

:class:`FakeProvider` answers ``POST /v1/chat/completions`` as the OpenAI API does, up to
``capacity`` requests per second (fixed one-second windows, as a provider's limiter counts);
beyond that it answers 429 with ``Retry-After``. It counts both, so a test knows how many
provider calls were rejected. :func:`run_storm` sends calls at it from several processes of
several threads through the real LiteLLMClient (litellm, the openai SDK, HTTP), with or
without the fleet's shared limiter in front.
"""

from __future__ import annotations

import json
import multiprocessing
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import redis

MODEL = "openai/storm-model"


class FakeProvider:
    """An OpenAI chat-completions endpoint on 127.0.0.1 that takes ``capacity`` requests a second."""

    def __init__(self, capacity: int, latency: float = 0.005) -> None:
        self.capacity = capacity
        self.latency = latency
        self.accepted = 0
        self.rejected = 0
        self._lock = threading.Lock()
        self._window = -1
        self._in_window = 0
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def api_base(self) -> str:
        """The base URL to give litellm."""
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    @property
    def rejected_share(self) -> float:
        """Rejected calls over all calls the provider got."""
        total = self.accepted + self.rejected
        return self.rejected / total if total else 0.0

    def __enter__(self) -> FakeProvider:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def reset(self) -> None:
        """Forget the calls counted so far."""
        with self._lock:
            self.accepted = self.rejected = 0

    def admit(self) -> bool:
        """Count one request; True if it is within this second's capacity."""
        window = int(time.monotonic())
        with self._lock:
            if window != self._window:
                self._window, self._in_window = window, 0
            self._in_window += 1
            admitted = self._in_window <= self.capacity
            if admitted:
                self.accepted += 1
            else:
                self.rejected += 1
            return admitted

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        provider = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                request = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                if not provider.admit():
                    error = {
                        "message": "Rate limit reached",
                        "type": "requests",
                        "code": "rate_limit_exceeded",
                    }
                    self._reply(429, {"error": error}, {"Retry-After": "1"})
                    return
                time.sleep(provider.latency)
                self._reply(200, completion(str(request.get("model", ""))), {})

            def _reply(self, status: int, body: dict[str, Any], headers: dict[str, str]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

        return Handler


def completion(model: str) -> dict[str, Any]:
    """A chat completion as the OpenAI API returns it."""
    return {
        "id": "chatcmpl-storm",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
    }


@dataclass(frozen=True)
class StormPhase:
    """One phase of a storm: calls that got a reply, calls that failed, and the provider's counts."""

    succeeded: int
    failed: int
    accepted: int
    rejected: int

    @property
    def rejected_share(self) -> float:
        """Provider calls answered 429 over all provider calls."""
        total = self.accepted + self.rejected
        return self.rejected / total if total else 0.0


# The phases each storm process runs, in order: straight at the provider, then through the limiter.
PHASES = ("unlimited", "limited")


def storm_process(
    redis_url: str,
    prefix: str,
    api_base: str,
    rpm: float,
    threads: int,
    calls: int,
    queues: tuple[Any, Any],
    go: Any,
) -> None:
    """One worker process: per phase, ``threads`` threads each make ``calls`` calls, then it reports."""
    from ace_workers.distributed.tenancy.limiter import Limiter
    from ace_workers.distributed.tenancy.limiter_gate import LimiterGate
    from ace_workers.distributed.tenancy.model_limits import ModelLimits
    from ace_workers.distributed.tenancy.tenants import CachedTenants, TenantRegistry
    from ace_workers.providers import LiteLLMClient

    client = redis.Redis.from_url(redis_url)
    limiter = Limiter(client, prefix=prefix, model_limits={MODEL: ModelLimits(MODEL, rpm=rpm)})
    gate = LimiterGate(limiter, CachedTenants(TenantRegistry(client, prefix=prefix)), "storm")
    options: dict[str, Any] = {"api_base": api_base, "api_key": "sk-test", "num_retries": 10}
    options.update(retry_wait_seconds=0.05, retry_max_wait_seconds=0.5)
    clients = {
        "unlimited": LiteLLMClient(MODEL, **options),
        "limited": LiteLLMClient(MODEL, gate=gate, **options),
    }
    clients["unlimited"].complete("warm up litellm")  # its first call loads what it needs
    for phase, event in zip(PHASES, go, strict=True):
        queues[0].put(True)  # ready
        event.wait()
        counts = {"succeeded": 0, "failed": 0}
        lock = threading.Lock()
        running = [
            threading.Thread(target=call_repeatedly, args=(clients[phase], calls, counts, lock))
            for _ in range(threads)
        ]
        for started in running:
            started.start()
        for finished in running:
            finished.join()
        queues[1].put((counts["succeeded"], counts["failed"]))


def call_repeatedly(llm: Any, calls: int, counts: dict[str, int], lock: threading.Lock) -> None:
    """One storm thread: ``calls`` calls, each counted as succeeded or failed (an LLMError)."""
    from ace_workers.errors import LLMError

    for _ in range(calls):
        try:
            llm.complete("hello")
            outcome = "succeeded"
        except LLMError:
            outcome = "failed"
        with lock:
            counts[outcome] += 1


def run_storm(
    provider: FakeProvider,
    *,
    redis_url: str,
    prefix: str,
    rpm: float,
    processes: int = 2,
    threads: int = 8,
    calls: int = 8,
) -> dict[str, StormPhase]:
    """``processes`` x ``threads`` threads calling ``provider``: straight, then through the shared limiter.

    Every process warms up (imports litellm) before the first phase starts, and each phase
    starts in all processes at once; the provider's counts cover one phase each.
    """
    context = multiprocessing.get_context("spawn")
    ready, done = context.Queue(), context.Queue()
    go = [context.Event() for _ in PHASES]
    workers = [
        context.Process(
            target=storm_process,
            args=(redis_url, prefix, provider.api_base, rpm, threads, calls, (ready, done), go),
        )
        for _ in range(processes)
    ]
    for worker in workers:
        worker.start()
    phases = {}
    try:
        for phase, event in zip(PHASES, go, strict=True):
            for _ in workers:
                ready.get(timeout=300)
            provider.reset()
            event.set()
            reports = [done.get(timeout=300) for _ in workers]
            phases[phase] = StormPhase(
                sum(r[0] for r in reports), sum(r[1] for r in reports), provider.accepted, provider.rejected
            )
    finally:
        for worker in workers:
            worker.join(timeout=30)
            if worker.is_alive():
                worker.kill()
    return phases
