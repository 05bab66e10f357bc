"""OpenTelemetry set-up: which tracer provider ace-workers' spans go to, and trace-context carriers.

OpenTelemetry is the optional extra ``otel`` (``pip install 'ace-workers[otel]'``).
Without its API installed every function here is a no-op and nothing is
imported; asking for tracing explicitly (:func:`configure_tracing`,
:func:`use_tracer_provider`) raises an ImportError that names the extra.

Spans go to the first of:

1. the provider given to :func:`use_tracer_provider` (tests, or an application
   that wants ace-workers' spans apart from its own);
2. the provider :func:`configure_tracing` built (``ace-workers worker
   --otlp-endpoint``, ``ACE_OTLP_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_ENDPOINT``);
3. OpenTelemetry's global provider: whatever the application installed with
   ``trace.set_tracer_provider`` (a no-op until it does). A producer in an
   application that already traces needs nothing else: its samples' traces
   start from its own provider.

A trace context travels between processes as a W3C ``traceparent`` carrier
(:func:`inject_carrier`, :func:`extract_context`): a plain ``dict[str, str]``
that fits in a JSON payload.
"""

from __future__ import annotations

import functools
import importlib
import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from ..extras import require_extra

__all__ = [
    "OTLP_TRACES_PATH",
    "TRACER_NAME",
    "configure_tracing",
    "extract_context",
    "flush_tracing",
    "get_tracer",
    "inject_carrier",
    "otlp_traces_url",
    "shutdown_tracing",
    "tracing_available",
    "use_tracer_provider",
]

logger = logging.getLogger(__name__)

TRACER_NAME = "ace_workers"
# Where an OTLP/HTTP collector takes spans, below its base URL (the OTLP spec's default path).
OTLP_TRACES_PATH = "/v1/traces"


@dataclass(frozen=True)
class _Api:
    """The OpenTelemetry API modules tracing uses (untyped where the package ships no py.typed)."""

    trace: ModuleType
    context: Any
    propagate: ModuleType


@functools.cache
def _api() -> _Api | None:
    """The OpenTelemetry API, imported on first use; None when it is not installed."""
    try:
        return _Api(
            trace=importlib.import_module("opentelemetry.trace"),
            context=importlib.import_module("opentelemetry.context"),
            propagate=importlib.import_module("opentelemetry.propagate"),
        )
    except ImportError:
        return None


def tracing_available() -> bool:
    """True if the OpenTelemetry API is installed (spans are made; where they go is the provider's)."""
    return _api() is not None


def api() -> _Api | None:
    """The OpenTelemetry API modules, or None without the extra (for the span helpers)."""
    return _api()


class _State:
    """The process's tracing choices, behind one lock."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.override: Any = None  # from use_tracer_provider
        self.configured: Any = None  # the provider configure_tracing built
        self.configured_for: tuple[str | None, str] | None = None
        self.tracer: tuple[Any, Any] | None = None  # (provider, its tracer), the last one asked for


_state = _State()


def use_tracer_provider(provider: Any) -> None:
    """Send ace-workers' spans to ``provider`` (an SDK TracerProvider); None goes back to the default.

    Unlike OpenTelemetry's global provider this can be set again, so tests (and
    applications keeping ace-workers' spans apart) can install and remove one.
    """
    if provider is not None:
        require_extra("otel", "tracing to a tracer provider")
    with _state.lock:
        _state.override = provider


def otlp_traces_url(endpoint: str) -> str:
    """The traces URL of an OTLP/HTTP ``endpoint``: its base URL plus ``/v1/traces``, unless given."""
    endpoint = endpoint.rstrip("/")
    return endpoint if endpoint.endswith(OTLP_TRACES_PATH) else endpoint + OTLP_TRACES_PATH


def configure_tracing(
    endpoint: str | None = None,
    *,
    service_name: str = "ace-workers",
    exporter: Any = None,
    set_global: bool = True,
) -> Any:
    """Install a TracerProvider exporting in batches over OTLP/HTTP to ``endpoint``; return it.

    ``endpoint`` is a collector's base URL (``http://collector:4318``; ``/v1/traces``
    is added) or its full traces URL; None leaves it to the exporter's standard
    ``OTEL_EXPORTER_OTLP_*`` variables. ``exporter`` replaces the OTLP exporter
    (tests). With ``set_global`` the provider also becomes OpenTelemetry's global
    one, unless the application installed its own first.

    Idempotent: a second call returns the provider of the first (and logs a
    warning if it asked for another endpoint or service name).

    Raises:
        MissingExtraError: the ``otel`` extra is not installed (an ImportError).
    """
    require_extra("otel", "OpenTelemetry tracing")
    with _state.lock:
        wanted = (endpoint, service_name)
        if _state.configured is not None:
            if _state.configured_for != wanted:
                logger.warning(
                    "tracing is configured already (%s); %s ignored", _state.configured_for, wanted
                )
            return _state.configured
        provider = _build_provider(endpoint, service_name, exporter)
        _state.configured, _state.configured_for = provider, wanted
    if set_global:
        _set_global_provider(provider)
    logger.info(
        "tracing: spans of %s go to %s", service_name, endpoint or "the OTEL_EXPORTER_OTLP_* endpoint"
    )
    return provider


def _build_provider(endpoint: str | None, service_name: str, exporter: Any) -> Any:
    sdk_trace = importlib.import_module("opentelemetry.sdk.trace")
    sdk_export = importlib.import_module("opentelemetry.sdk.trace.export")
    resources = importlib.import_module("opentelemetry.sdk.resources")
    if exporter is None:
        require_extra("otel", "exporting spans over OTLP/HTTP")
        otlp = importlib.import_module("opentelemetry.exporter.otlp.proto.http.trace_exporter")
        exporter = otlp.OTLPSpanExporter(endpoint=otlp_traces_url(endpoint) if endpoint else None)
    provider = sdk_trace.TracerProvider(resource=resources.Resource.create({"service.name": service_name}))
    # Batched: a span costs the step an append to a queue, never a network round trip.
    provider.add_span_processor(sdk_export.BatchSpanProcessor(exporter))
    return provider


def _set_global_provider(provider: Any) -> None:
    api = _api()
    assert api is not None  # require_extra passed
    current = api.trace.get_tracer_provider()
    # The API's placeholder until someone installs a provider; set_tracer_provider works once.
    if type(current).__name__ == "ProxyTracerProvider":
        api.trace.set_tracer_provider(provider)
    else:
        logger.info("tracing: the application's global tracer provider is kept; ace-workers uses its own")


def flush_tracing(timeout_millis: int = 30_000) -> None:
    """Export the spans still buffered by the provider ace-workers uses (a worker calls it at shutdown)."""
    provider = _current_provider()
    flush = getattr(provider, "force_flush", None)
    if flush is not None:
        flush(timeout_millis)


def shutdown_tracing() -> None:
    """Flush and shut down the provider :func:`configure_tracing` built, and forget it."""
    with _state.lock:
        provider, _state.configured, _state.configured_for = _state.configured, None, None
        _state.tracer = None
    if provider is not None:
        provider.shutdown()


def _current_provider() -> Any:
    with _state.lock:
        provider = _state.override if _state.override is not None else _state.configured
    if provider is None:
        api = _api()
        return None if api is None else api.trace.get_tracer_provider()
    return provider


def get_tracer() -> Any:
    """The tracer of ace-workers' spans (see the module docstring), or None without OpenTelemetry."""
    api = _api()
    if api is None:
        return None
    with _state.lock:
        provider = _state.override if _state.override is not None else _state.configured
        cached = _state.tracer
        if cached is not None and cached[0] is provider:
            return cached[1]
        # Without a provider of ours: a proxy tracer that follows the global provider once it is set.
        tracer = api.trace.get_tracer(TRACER_NAME, tracer_provider=provider)
        _state.tracer = (provider, tracer)
    return tracer


def inject_carrier(context: Any = None) -> dict[str, str]:
    """The W3C trace context of ``context`` (default: the current one) as a JSON-able dict; {} if none."""
    api = _api()
    carrier: dict[str, str] = {}
    if api is not None:
        api.propagate.inject(carrier, context=context)
    return carrier


def extract_context(carrier: Mapping[str, Any] | None) -> Any:
    """The trace context a carrier holds, or None when it holds no valid one (or OpenTelemetry is missing)."""
    api = _api()
    if api is None or not carrier or not isinstance(carrier, Mapping):
        return None
    text = {key: value for key, value in carrier.items() if isinstance(value, str)}
    context = api.propagate.extract(text)
    if not api.trace.get_current_span(context).get_span_context().is_valid:
        return None
    return context
