"""``ace-workers worker``: a Celery worker for some queue roles, kept running until a shutdown signal."""

from __future__ import annotations

import logging
import time
from typing import Annotated
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
from .common import require_shared_redis
from .models import refuse_unusable_models

logger = logging.getLogger(__name__)

__all__ = ["worker_command", "worker_queues"]


def worker_command(
    queues: Annotated[
        str,
        typer.Option(help="Comma-separated queue roles: execute, learn, write (or write.K: partition K)."),
    ] = "execute,learn",
    partition: Annotated[
        int | None,
        typer.Option(min=0, help="The write partition this writer serves, with ACE_WRITE_PARTITIONS > 1."),
    ] = None,
    concurrency: Annotated[int, typer.Option(min=1, help="Threads (or processes with --pool prefork).")] = 4,
    pool: Annotated[str, typer.Option(help="Celery pool: threads, prefork, solo.")] = "threads",
    force: Annotated[bool, typer.Option(help="Allow concurrency > 1 on the write queue (unsafe).")] = False,
    loglevel: Annotated[str, typer.Option(help="Celery log level.")] = "INFO",
    hostname: Annotated[
        str | None, typer.Option(help="Node name (default: ROLES@HOST, e.g. learn@host1; %h is the host).")
    ] = None,
    metrics_port: Annotated[
        int,
        typer.Option(
            min=0, help="Serve /metrics (Prometheus) and /healthz on this port (0: off; threads/solo pools)."
        ),
    ] = 0,
    log_format: Annotated[
        str | None,
        typer.Option(
            help="text, or json (one object per line); both name each line's step [ACE_LOG_FORMAT]."
        ),
    ] = None,
    otlp_endpoint: Annotated[
        str | None,
        typer.Option(
            help="Send OpenTelemetry traces (one per sample) to this OTLP/HTTP collector, e.g. "
            "http://localhost:4318; needs the otel extra "
            "[ACE_OTLP_ENDPOINT, else OTEL_EXPORTER_OTLP_ENDPOINT]."
        ),
    ] = None,
) -> None:
    """Run a Celery worker for some queue roles, with the project's settings (needs ACE_REDIS_URL)."""

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


def worker_queues(settings: WorkerSettings, roles: list[str], partition: int | None) -> list[str]:
    """The queues a worker of ``roles`` serves; a clear error for a role or partition that does not fit.

    With ACE_WRITE_PARTITIONS=N > 1 a writer serves one partition: ``write`` with
    ``--partition K``, or ``write.K``.
    """
    names, partitions = settings.queue_names(), settings.write_partitions
    partition_roles = [f"write.{k}" for k in range(partitions)] if partitions > 1 else []
    unknown = [role for role in roles if role not in ("execute", "learn", "write", *partition_roles)]
    if unknown or not roles:
        shown = "execute, learn, write" + (f", write.0 to write.{partitions - 1}" if partitions > 1 else "")
        raise typer.BadParameter(
            f"unknown queue role(s) {unknown} with ACE_WRITE_PARTITIONS={partitions}: use {shown}"
        )
    if partition is not None and "write" not in roles:
        raise typer.BadParameter("--partition is for a writer: give it with --queues write")
    if partition is not None and partition >= partitions:
        raise typer.BadParameter(
            f"--partition {partition}: ACE_WRITE_PARTITIONS={partitions} has partitions 0 to {partitions - 1}"
        )
    served = []
    for role in roles:
        if role in ("execute", "learn") or (role == "write" and partitions == 1):
            served.append(names[role])
        elif role == "write":
            if partition is None:
                raise typer.BadParameter(
                    f"ACE_WRITE_PARTITIONS={partitions}: a writer serves one partition; "
                    f"add --partition K (0 to {partitions - 1}) or use --queues write.K"
                )
            served.append(settings.write_queues()[partition])
        else:  # write.K
            served.append(settings.write_queues()[int(role.removeprefix("write."))])
    return served


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
