"""``ace-workers worker``: a Celery worker for some queue roles, kept running until a shutdown signal."""

from __future__ import annotations

from typing import Annotated

import typer

from ..counts import noun_for
from ..distributed.settings import WorkerSettings

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
    from .worker_run import run_worker  # Celery and the worker's parts: only when a worker starts

    run_worker(
        worker_queues,
        queues=queues,
        partition=partition,
        concurrency=concurrency,
        pool=pool,
        force=force,
        loglevel=loglevel,
        hostname=hostname,
        metrics_port=metrics_port,
        log_format=log_format,
        otlp_endpoint=otlp_endpoint,
    )


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
            f"unknown queue {noun_for(len(unknown), 'role')} {unknown} "
            f"with ACE_WRITE_PARTITIONS={partitions}: use {shown}"
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
