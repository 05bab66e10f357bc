"""What ``ace-workers worker`` runs: the Celery worker, its checks, observability and watchdog.

Imported by the command only when a worker starts (``import ace_workers.cli`` loads no Celery).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import redis
import typer

from ..distributed.ops.embedded_redis import resolve_redis
from ..distributed.service import Service, build_service
from ..distributed.settings import WorkerSettings
from ..distributed.worker.app import (
    check_app_security,
    check_write_concurrency,
    wait_while_redis_is_full,
)
from ..distributed.worker.celery_worker import (
    flush_spans_at_worker_shutdown,
    run_worker_until_signalled,
    use_worker_logging,
)
from ..distributed.worker.errors import WritePartitionsChanged
from ..distributed.worker.health import ConsumptionWatchdog
from ..distributed.worker.partitions import check_partition_count
from ..observability import LOG_FORMATS, start_metrics_server
from ..observability.tracing import configure_tracing
from ..redaction import redactor_for
from .models import refuse_unusable_models
from .options import require_shared_redis

logger = logging.getLogger(__name__)

__all__ = ["run_worker"]


def run_worker(
    worker_queues: Callable[[WorkerSettings, list[str], int | None], list[str]],
    queues: str,
    partition: Any,
    concurrency: Any,
    pool: Any,
    force: Any,
    loglevel: Any,
    hostname: Any,
    metrics_port: Any,
    log_format: Any,
    otlp_endpoint: Any,
) -> None:
    """Check, then run a worker until a shutdown signal (the ``worker`` command's options, as given)."""

    settings = WorkerSettings.from_env()
    log_format = _worker_log_format(log_format, settings, metrics_port, pool)
    otlp_endpoint = _checked_otlp_endpoint(otlp_endpoint or settings.otlp_endpoint)
    require_shared_redis(settings, "worker", "it serves queues other processes fill", kept_embedded=False)
    roles = [role.strip() for role in queues.split(",") if role.strip()]
    served = worker_queues(settings, roles, partition)
    check_write_concurrency(served, concurrency, force=force, write_queues=settings.write_queues())
    refuse_unusable_models(settings, roles)  # not one failed sample after another once it serves
    with resolve_redis(settings) as (broker_url, redis_url):
        service = build_service(settings, redis_url=redis_url, broker_url=broker_url)
        check_app_security(service.app)
        if "learn" in roles:
            service.runtime.check_reflector()  # e.g. ACE_REFLECTOR=rr without its sandbox's OS boundary
        # Built now (detect-secrets' plugins imported, patterns compiled: ~0.1 CPU-s), not inside
        # the first sample; prefork children inherit it.
        redactor_for(settings.redact)
        watchdog = ConsumptionWatchdog(
            service.dispatcher,
            served,
            stall_seconds=settings.worker_stall_seconds,
            check_seconds=min(30.0, settings.worker_stall_seconds / 5),
        )
        watchdog.start()
        _start_observability(service, log_format, loglevel, metrics_port, watchdog)
        writer = bool(set(served) & set(settings.write_queues()))
        _check_partitions_when_redis_has_room(service, settings, redis_url, watchdog, writer=writer)
        _start_tracing(otlp_endpoint, roles)
        argv = [
            # json: no banner on stdout, so every line the worker writes is one JSON object.
            *(["--quiet"] if log_format == "json" else []),
            "worker",
            f"--queues={','.join(served)}",
            f"--concurrency={concurrency}",
            f"--pool={pool}",
            f"--loglevel={loglevel}",
            # Distinct default names per role, so Flower and `celery inspect` tell the workers apart.
            f"--hostname={hostname or '-'.join(roles) + '@%h'}",
            # Mingle (a new worker asks the others for revoked task ids, waiting ~1 s for answers)
            # and gossip (workers tracking each other's events) serve nothing here: a batch is
            # cancelled in Redis, not by revoking tasks, and Flower follows the workers'
            # heartbeats, which stay on. Without them a worker starts faster and a fleet of
            # N workers sends no N x N gossip.
            "--without-mingle",
            "--without-gossip",
        ]
        run_worker_until_signalled(service.app, service.runtime, argv, redis_url, watchdog)


def _worker_log_format(log_format: str | None, settings: WorkerSettings, metrics_port: int, pool: str) -> str:
    """The worker's log format; refuses metrics on a pool whose children would each count alone."""
    if metrics_port and pool == "prefork":
        raise typer.BadParameter(
            "--metrics-port needs --pool threads or solo: prefork children each count in a registry of "
            "their own, which the parent's endpoint would not show. Run one threads worker per process."
        )
    chosen = log_format or settings.log_format
    if chosen not in LOG_FORMATS:
        raise typer.BadParameter(f"--log-format {chosen!r}: use {' or '.join(LOG_FORMATS)}")
    return chosen


def _start_observability(
    service: Service, log_format: str, loglevel: str, metrics_port: int, watchdog: ConsumptionWatchdog
) -> None:
    """Our logging in either format (both carry the step fields), and /metrics and /healthz if asked for."""
    use_worker_logging(log_format, loglevel)
    if metrics_port:
        start_metrics_server(service.runtime.metrics, metrics_port, health=watchdog.health)


def _check_partitions_when_redis_has_room(
    service: Service, settings: WorkerSettings, redis_url: str, watchdog: ConsumptionWatchdog, *, writer: bool
) -> None:
    """Check (a writer: record) the write partition count, waiting while Redis refuses the write.

    A writer's record is a write: on a full Redis the worker waits, saying so on
    /healthz, as it does before serving, instead of dying on the refused SET.
    """
    while True:
        wait_while_redis_is_full(
            redis_url, on_wait=watchdog.note_problem, prefix=service.runtime.settings.queue_prefix
        )
        try:
            check_partition_count(service.dispatcher, writer=writer)
            return
        except WritePartitionsChanged as exc:
            raise typer.BadParameter(str(exc)) from exc
        except redis.OutOfMemoryError:  # filled again between the look and the write
            watchdog.note_problem("Redis is out of memory (maxmemory); the worker waits for room")
            time.sleep(1.0)


def _checked_otlp_endpoint(endpoint: str | None) -> str | None:
    """``endpoint`` if it is an OTLP/HTTP URL (or None); checked before the worker connects anywhere."""
    if endpoint and urlsplit(endpoint).scheme not in ("http", "https"):
        raise typer.BadParameter(
            f"--otlp-endpoint {endpoint!r}: an OTLP/HTTP collector URL is http:// or https://"
        )
    return endpoint


def _start_tracing(endpoint: str | None, roles: list[str]) -> None:
    """Traces to ``endpoint`` as service ``ace-workers-ROLES``, flushed when the worker stops."""
    if not endpoint:
        return
    try:
        configure_tracing(endpoint, service_name=f"ace-workers-{'-'.join(roles)}")
    except ImportError as exc:
        raise typer.BadParameter(str(exc)) from exc
    flush_spans_at_worker_shutdown()
