"""Observability of workers: Prometheus metrics and structured (JSON) logs."""

from .logs import (
    LOG_FORMATS,
    JsonFormatter,
    StepContextFilter,
    StepLogContext,
    configure_logging,
    current_step,
    step_log_context,
)
from .metrics import METRIC_NAMES, MetricsServer, WorkerMetrics, start_metrics_server

__all__ = [
    # metrics
    "WorkerMetrics",
    "MetricsServer",
    "start_metrics_server",
    "METRIC_NAMES",
    # logs
    "StepLogContext",
    "step_log_context",
    "current_step",
    "StepContextFilter",
    "JsonFormatter",
    "configure_logging",
    "LOG_FORMATS",
]
