"""Commands that run learning: learn, worker, enqueue, status."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Annotated
from urllib.parse import urlsplit

import redis
import typer
from celery.signals import worker_shutting_down
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from ...observability import LOG_FORMATS, start_metrics_server
from ...observability.tracing import configure_tracing
from ...observability.worker_logging import use_worker_logging
from ..ops.embedded_redis import resolve_redis
from ..producer.producer import BatchHandle
from ..service import Service, build_service, reset_event_loop
from ..settings import DEDUP_OFF, WorkerSettings
from ..store.batches import BatchState, BatchStatus
from ..worker.app import (
    check_app_security,
    check_write_concurrency,
    redis_out_of_memory,
    wait_while_redis_is_full,
)
from ..worker.errors import WritePartitionsChanged
from ..worker.health import ConsumptionWatchdog
from ..worker.partitions import check_partition_count, queue_consumers
from ..worker.reconcile import reconcile_batch
from ..worker.trace_context import flush_spans_at_worker_shutdown
from .common import (
    check_output_path,
    check_recipe,
    check_skillbook_name,
    console,
    describe_fill,
    enqueue_file,
    enqueue_inputs,
    open_service,
    print_json,
    redis_settings,
    require_workers,
    scan_inputs,
    settings_for_model,
    skillbook_fill,
    write_skillbook_files,
)
from .sessions import check_format, scan_sessions, stream_sessions

logger = logging.getLogger(__name__)

__all__ = ["batch_app", "enqueue_command", "learn_command", "status_command", "worker_command"]


def follow_batch(handle: BatchHandle, label: str) -> None:
    """Show a progress bar until the batch is done."""
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[detail]}"),
        TimeElapsedColumn(),
        console=console,
    ) as progress:
        status = handle.status()
        task = progress.add_task(label, total=status.total or None, detail="")
        while True:
            status = handle.status()
            detail = (
                f"epoch {status.epoch}/{status.epochs}, queued {status.queued}, "
                f"running {status.running}, failed {status.failed}"
            )
            progress.update(
                task, completed=status.done + status.failed, total=status.total or None, detail=detail
            )
            if status.state is BatchState.DONE:
                return
            time.sleep(0.1)


def _accuracy_table(handle: BatchHandle) -> Table | None:
    results = [r for r in handle.results() if r.output is not None and r.output.agent_output is not None]
    if not results:
        return None
    table = Table("epoch", "accuracy", "")
    epochs = sorted({r.output.epoch for r in results if r.output is not None})
    for epoch in epochs:
        outs = [r.output for r in results if r.output is not None and r.output.epoch == epoch]
        right = [
            o
            for o in outs
            if o.agent_output is not None
            and o.sample is not None
            and o.agent_output.final_answer == o.sample.ground_truth
        ]
        value = len(right) / len(outs)
        table.add_row(str(epoch), f"{value:6.1%}", "#" * round(value * 30))
    return table


def dedup_hint(settings: WorkerSettings) -> str | None:
    """One line on how to turn deduplication on, when it is off; None when it is on."""
    if settings.dedup_provider != DEDUP_OFF:
        return None
    return (
        "deduplication is off: set ACE_DEDUP_PROVIDER=sentence_transformers (the embeddings extra) "
        "to consolidate near-duplicate skills"
    )


def learn_command(
    traces: Annotated[
        Path, typer.Argument(help="JSONL file: one trace (or, with --recipe ace, one sample) per line.")
    ],
    skillbook: Annotated[str, typer.Option(help="Name of the skillbook in Redis.")] = "default",
    epochs: Annotated[int, typer.Option(min=1, help="Passes over the input.")] = 1,
    model: Annotated[
        str | None, typer.Option(help="Model for every role: 'sim' or a litellm model string.")
    ] = None,
    recipe: Annotated[
        str, typer.Option(help="trace_analyser, ace, or a name configured in ACE_RECIPES.")
    ] = "trace_analyser",
    out: Annotated[Path | None, typer.Option(help="Write the skillbook JSON here.")] = None,
    markdown: Annotated[Path | None, typer.Option(help="Write the skillbook as markdown here.")] = None,
    learn_threads: Annotated[
        int, typer.Option(min=1, help="Learn-queue threads of the in-process workers.")
    ] = 4,
) -> None:
    """Learn a skillbook from a JSONL file through the distributed pipeline.

    Without ACE_REDIS_URL it starts an embedded Redis and in-process workers for
    all three queues; with it, it only enqueues and follows while your workers learn.
    """
    settings = settings_for_model(model)
    check_skillbook_name(skillbook, "--skillbook")
    check_recipe(recipe, settings)
    check_output_path(out, "--out")
    check_output_path(markdown, "--markdown")
    count = scan_inputs(traces, recipe, settings, epochs)
    where = settings.redis_url or "an embedded Redis with in-process workers"
    console.print(f"learning [bold]{skillbook}[/] from {count} input(s) x {epochs} epoch(s) on {where}")
    hint = dedup_hint(settings)
    if hint:
        console.print(hint)
    with open_service(
        settings, run_workers=settings.redis_url is None, learn_threads=learn_threads
    ) as service:
        if settings.redis_url:
            require_workers(service)
        handle = enqueue_file(service, traces, count, skillbook, epochs, recipe)
        follow_batch(handle, "learning")
        status = handle.status()
        store = service.runtime.store(skillbook)
        book = store.export()
        table = _accuracy_table(handle)
        if table is not None:
            console.print(table)
        console.print(
            f"batch {handle.batch_id}: {status.done} done, {status.failed} failed in "
            f"{status.elapsed_seconds:.1f} s; skillbook {skillbook!r} at version {store.version()} "
            f"with {len(book)} skill(s)"
        )
        for error in handle.errors()[:5]:
            console.print(
                f"[red]epoch {error['epoch']} sample {error['index']}: {error['step']}: {error['error']}[/]"
            )
        console.print(book.as_markdown(), markup=False)
        write_skillbook_files(book, out, markdown)
        for path, what in ((out, "skillbook"), (markdown, "markdown")):
            if path is not None:
                console.print(f"{what} written to {path}")
        if status.failed:
            raise typer.Exit(code=1)


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
        str | None, typer.Option(help="text (Celery's) or json, one object per line [ACE_LOG_FORMAT].")
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
    if not settings.redis_url:
        raise typer.BadParameter("a worker needs ACE_REDIS_URL: it serves queues other processes fill")
    roles = [role.strip() for role in queues.split(",") if role.strip()]
    served = worker_queues(settings, roles, partition)
    check_write_concurrency(served, concurrency, force=force, write_queues=settings.write_queues())
    with resolve_redis(settings) as (broker_url, redis_url):
        service = build_service(settings, redis_url=redis_url, broker_url=broker_url)
        check_app_security(service.app)
        watchdog = ConsumptionWatchdog(
            service.app,
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
        ]
        _run_worker_until_signalled(service, argv, redis_url, watchdog)


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


def _run_worker_until_signalled(
    service: Service, argv: list[str], redis_url: str, watchdog: ConsumptionWatchdog
) -> None:
    """Run the Celery worker until a shutdown signal; start it again whenever it stops by itself.

    Celery stops a worker on an "unrecoverable error" and the process then exits 0, so a
    restart-on-failure supervisor would not even restart it. That happens when Redis refuses
    writes (out of memory), at start or later, and when a Redis restart breaks the connection
    at the wrong moment. This process waits while Redis is full (shown on /healthz), backs
    off, and starts the worker again; only a shutdown signal ends it.
    """
    signalled: list[str] = []

    def note_signal(sig: str = "", **_: object) -> None:
        signalled.append(sig)

    worker_shutting_down.connect(note_signal, weak=False)
    backoff = 1.0
    try:
        while True:
            wait_while_redis_is_full(redis_url, on_wait=watchdog.note_problem)
            started = time.monotonic()
            service.app.worker_main(argv)
            if signalled:
                return
            if time.monotonic() - started > 60:
                backoff = 1.0  # it ran a while: this stop is news, not a loop
            cause = "Redis is out of memory" if redis_out_of_memory(redis_url) else "an unrecoverable error"
            logger.warning("the worker stopped by itself (%s); starting it again in %.0f s", cause, backoff)
            reset_event_loop()
            time.sleep(backoff)
            backoff = min(2 * backoff, 30.0)
    finally:
        worker_shutting_down.disconnect(note_signal)


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
    """JSON logs (text leaves Celery's logging as it is), and /metrics and /healthz if asked for."""
    if log_format == "json":
        use_worker_logging("json", loglevel)
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
        wait_while_redis_is_full(redis_url, on_wait=watchdog.note_problem)
        try:
            check_partition_count(service.app, service.runtime.redis, settings, writer=writer)
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


def enqueue_command(
    traces: Annotated[
        Path,
        typer.Argument(
            help="JSONL file of traces (samples with --recipe ace); with --format claude-code or openclaw, "
            "a session file or a folder of them (every *.jsonl below it); with --format browser-use, a "
            "saved AgentHistoryList or a folder of them (every *.json below it)."
        ),
    ],
    skillbook: Annotated[str, typer.Option(help="Name of the skillbook in Redis.")] = "default",
    epochs: Annotated[int, typer.Option(min=1)] = 1,
    recipe: Annotated[
        str,
        typer.Option(
            help="trace_analyser, ace, claude_code_traces, openclaw_traces, browser_use_traces, or a name "
            "set in ACE_RECIPES."
        ),
    ] = "trace_analyser",
    input_format: Annotated[
        str,
        typer.Option(
            "--format",
            help="jsonl: one input per line. claude-code, openclaw, browser-use: one trace per session "
            "file, converted here, or on the workers with --recipe claude_code_traces / openclaw_traces / "
            "browser_use_traces.",
        ),
    ] = "jsonl",
) -> None:
    """Enqueue a JSONL file, or recorded agent sessions, as one batch for running workers; print the batch id.

    Every argument is checked first, then the input is read twice, a line (or a
    session) at a time: everything is checked and counted, then sent. The
    producer's memory does not grow with the input.
    """
    settings = WorkerSettings.from_env()
    check_skillbook_name(skillbook, "--skillbook")
    check_recipe(recipe, settings)
    check_format(input_format, recipe)
    if not settings.redis_url:
        raise typer.BadParameter("enqueue needs ACE_REDIS_URL (use 'learn' to run everything in-process)")
    if input_format == "jsonl":
        count = scan_inputs(traces, recipe, settings, epochs)
    else:
        count = scan_sessions(traces, input_format, recipe, settings, epochs)
    with open_service(settings, run_workers=False, learn_threads=1) as service:
        require_workers(service)
        if input_format == "jsonl":
            handle = enqueue_file(service, traces, count, skillbook, epochs, recipe)
        else:
            inputs = stream_sessions(traces, input_format, recipe)
            handle = enqueue_inputs(service, inputs, traces, count, skillbook, epochs, recipe)
        typer.echo(handle.batch_id)


def status_command(
    batch_id: Annotated[str, typer.Argument(help="The id 'enqueue' printed.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON document, for scripts.")] = False,
) -> None:
    """Show a batch's progress and its errors, and whether its skillbook is full."""
    settings = WorkerSettings.from_env()
    with open_service(settings, run_workers=False, learn_threads=1) as service:
        handle = BatchHandle(batch_id, service.runtime, service.app)
        try:
            status = handle.status()
        except LookupError as exc:
            raise typer.BadParameter(str(exc)) from exc
        fill = skillbook_fill(service.runtime.store(status.skillbook))
        write_queue = settings.write_queue(status.skillbook)
        writers = queue_consumers(service.app).get(write_queue, [])
        if as_json:
            print_json(
                {
                    "batch_id": batch_id,
                    "skillbook": status.skillbook,
                    "recipe": status.recipe,
                    "state": status.state.value,
                    "total": status.total,
                    "done": status.done,
                    "failed": status.failed,
                    "running": status.running,
                    "queued": status.queued,
                    "epoch": status.epoch,
                    "epochs": status.epochs,
                    "elapsed_seconds": round(status.elapsed_seconds, 3),
                    "skillbook_fill": fill,
                    "write_queue": write_queue,
                    "write_queue_consumers": writers,
                    "errors": handle.errors(),
                }
            )
            return
        console.print(
            f"batch {batch_id} on {status.skillbook!r} ({status.recipe}): {status.state.value}, "
            f"{status.done} done, {status.failed} failed, {status.running} running, "
            f"{status.queued} queued of {status.total}, "
            f"epoch {status.epoch}/{status.epochs}, {status.elapsed_seconds:.1f} s"
        )
        console.print(_describe_writer(settings, status.skillbook, write_queue, writers))
        full = describe_fill(status.skillbook, fill)
        if full:
            console.print(f"[yellow]{full}[/]")
        for error in handle.errors():
            console.print(
                f"[red]epoch {error['epoch']} sample {error['index']}: {error['step']}: {error['error']}[/]"
            )


def _describe_writer(settings: WorkerSettings, skillbook: str, queue: str, writers: list[str]) -> str:
    """Where the skillbook's writes go and who serves that queue; a warning if nobody does."""
    partitions = settings.write_partitions
    where = f"partition {queue.rsplit('.', 1)[-1]} of {partitions}, " if partitions > 1 else ""
    if writers:
        return f"writes of {skillbook!r} go to {queue} ({where}served by {', '.join(writers)})"
    start = f"--queues write --partition {queue.rsplit('.', 1)[-1]}" if partitions > 1 else "--queues write"
    return (
        f"[yellow]writes of {skillbook!r} go to {queue} ({where}no worker serves it: "
        f"start one with 'ace-workers worker {start} --concurrency 1')[/]"
    )


batch_app = typer.Typer(
    help="One batch: resume what a crashed producer left unsent, or cancel it.", no_args_is_help=True
)


@batch_app.command("resume")
def resume_command(batch_id: Annotated[str, typer.Argument(help="The id 'enqueue' printed.")]) -> None:
    """Send the samples of a batch never sent (its producer died), and again those lost on the way."""
    settings = redis_settings("batch resume", "batches live in a shared Redis")
    with open_service(settings, run_workers=False, learn_threads=1) as service:
        status = _status_or_fail(service, batch_id)
        if status.state is not BatchState.RUNNING:
            console.print(f"batch {batch_id} is {status.state.value}: nothing to resume")
            return
        if not status.fully_stored:
            console.print(
                f"[red]batch {batch_id} stores {status.stored} of its {status.per_epoch} inputs (its "
                "producer died while storing them): it cannot be resumed; cancel it and send the inputs "
                "again[/]"
            )
            raise typer.Exit(code=1)
        require_workers(service)
        sent = service.producer.resume(batch_id)
        report = reconcile_batch(service.app, service.runtime, batch_id)
        console.print(
            f"batch {batch_id}: {sent} sample(s) never sent are on their way; "
            f"{len(report.redriven)} lost sample(s) sent again"
        )


@batch_app.command("cancel")
def cancel_command(batch_id: Annotated[str, typer.Argument(help="The id 'enqueue' printed.")]) -> None:
    """Stop a batch: steps not yet run are skipped, nothing is sent again, its records expire."""
    settings = redis_settings("batch cancel", "batches live in a shared Redis")
    with open_service(settings, run_workers=False, learn_threads=1) as service:
        status = _status_or_fail(service, batch_id)
        if status.state is not BatchState.RUNNING:
            console.print(f"batch {batch_id} is {status.state.value} already")
            return
        service.runtime.batches.cancel(batch_id)
    console.print(
        f"batch {batch_id} cancelled: {status.done} done and {status.failed} failed of {status.total}; "
        "the rest will not run"
    )


def _status_or_fail(service: Service, batch_id: str) -> BatchStatus:
    try:
        return service.runtime.batches.status(batch_id)
    except LookupError as exc:
        raise typer.BadParameter(str(exc), param_hint="BATCH_ID") from exc
