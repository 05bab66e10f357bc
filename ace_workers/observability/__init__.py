"""Observability: Prometheus metrics and structured (JSON) logs of workers, Opik and OpenTelemetry tracing.

Neither opik nor opentelemetry is imported here: each loads on first use. The names below load
their module on first use too (PEP 562), so the settings, which read ``LOG_FORMATS``, do not load
the metrics server or the tracing hook for every command.
"""

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

if TYPE_CHECKING:
    from .logs import (
        LOG_FORMATS,
        JsonFormatter,
        StepContextFilter,
        StepLogContext,
        TextFormatter,
        configure_logging,
        enter_step_log_context,
        leave_step_log_context,
        step_log_context,
    )
    from .metrics import METRIC_NAMES, MetricsServer, WorkerMetrics, start_metrics_server
    from .opik import OPIK_EXTRA, OpikSettings, connect_opik, register_opik_litellm_callback
    from .trace_hook import TracingHook
    from .tracing import configure_tracing, flush_tracing, shutdown_tracing, use_tracer_provider

__all__ = [
    # metrics
    "WorkerMetrics",
    "MetricsServer",
    "start_metrics_server",
    "METRIC_NAMES",
    # logs
    "StepLogContext",
    "step_log_context",
    "enter_step_log_context",
    "leave_step_log_context",
    "StepContextFilter",
    "JsonFormatter",
    "TextFormatter",
    "configure_logging",
    "LOG_FORMATS",
    # Opik tracing (the opik package is imported on first use only)
    "OpikSettings",
    "connect_opik",
    "register_opik_litellm_callback",
    "OPIK_EXTRA",
    # OpenTelemetry tracing (one trace per sample; opentelemetry is imported on first use only)
    "configure_tracing",
    "use_tracer_provider",
    "flush_tracing",
    "shutdown_tracing",
    "TracingHook",
]

_SOURCES = (".logs", ".metrics", ".opik", ".trace_hook", ".tracing")
__getattr__ = lazy_exports(__name__, __all__, _SOURCES)
