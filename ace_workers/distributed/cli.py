"""The distributed commands of ``ace-workers``: learn, worker, enqueue, status, skillbook, dead-letters."""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import redis
import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from ..core.environments import Sample
from ..core.files import write_text_atomically
from ..errors import AceError
from ..observability import LOG_FORMATS, start_metrics_server
from ..observability.worker_logging import use_worker_logging
from .batches import BatchState
from .chains import sample_chain
from .embedded import resolve_redis
from .errors import BatchSizeError
from .keys import dead_letters_key
from .local import Service, build_service, local_workers
from .monitor import flower_command
from .payload import PayloadError, check_trace
from .producer import BatchHandle
from .settings import DEDUP_OFF, DEDUP_PROVIDERS, WorkerSettings
from .store import list_skillbooks
from .write_scope import dedup_write_scope, write_scope

__all__ = [
    "dead_letters_app",
    "iter_jsonl",
    "read_jsonl",
    "register_commands",
    "scan_inputs",
    "skillbook_app",
    "stream_inputs",
]

logger = logging.getLogger(__name__)
console = Console()
skillbook_app = typer.Typer(help="Inspect and manage skillbooks stored in Redis.", no_args_is_help=True)
dead_letters_app = typer.Typer(help="Samples whose step failed after its retries.", no_args_is_help=True)


def iter_jsonl(path: Path) -> Iterator[tuple[int, Any, str | None]]:
    """(line number, value, None) per JSON line of a JSONL file, (line number, None, reason) per other line.

    Blank lines are skipped. Reads one line at a time: memory does not grow with the file.
    """
    try:
        with path.open("rb") as lines:
            for number, raw in enumerate(lines, start=1):
                if not raw.strip():
                    continue
                try:
                    yield number, json.loads(raw), None
                except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                    yield number, None, str(exc)
    except OSError as exc:
        raise typer.BadParameter(f"cannot read {path}: {exc.strerror or exc}") from exc


def read_jsonl(path: Path) -> tuple[list[Any], list[tuple[int, str]]]:
    """The JSON values of a JSONL file, and (line number, reason) of every line that is not JSON."""
    items: list[Any] = []
    bad: list[tuple[int, str]] = []
    for number, value, error in iter_jsonl(path):
        if error is None:
            items.append(value)
        else:
            bad.append((number, error))
    return items, bad


def _sample(item: Any, path: Path, number: int) -> Sample:
    names = {f.name for f in dataclasses.fields(Sample)}
    if not isinstance(item, dict) or "question" not in item or set(item) - names:
        raise typer.BadParameter(
            f"{path}:{number}: not a sample (an object with 'question' and only {', '.join(sorted(names))})"
        )
    return Sample(**item)


def scan_inputs(path: Path, recipe: str, settings: WorkerSettings) -> int:
    """The first pass over a JSONL input: check every line, warn of lines that are not JSON; count inputs.

    Nothing is sent yet. A trace too large or not JSON all the way down, a record that is
    not a sample (``recipe`` ace), no usable line, or more inputs than ACE_MAX_BATCH_SIZE
    is an error naming the file (and the line).
    """
    count = 0
    for number, value, error in iter_jsonl(path):
        if error is not None:
            console.print(f"[yellow]{path}:{number}: skipped, not JSON ({error})[/]")
            continue
        if recipe == "ace":
            _sample(value, path, number)
        else:
            try:
                check_trace(value, max_bytes=settings.max_trace_bytes)
            except PayloadError as exc:
                raise typer.BadParameter(f"{path}:{number}: {exc}") from exc
        count += 1
    if not count:
        raise typer.BadParameter(f"{path} holds no usable line")
    if count > settings.max_batch_size:
        raise typer.BadParameter(
            f"{path} holds {count} inputs, above ACE_MAX_BATCH_SIZE={settings.max_batch_size}; nothing "
            "was sent (split the file, or raise the limit)"
        )
    return count


def stream_inputs(path: Path, recipe: str) -> Iterator[Any]:
    """The second pass: the inputs of a JSONL file checked by scan_inputs, one line at a time."""
    for number, value, error in iter_jsonl(path):
        if error is None:
            yield _sample(value, path, number) if recipe == "ace" else value


def _enqueue_file(
    service: Service, path: Path, count: int, skillbook: str, epochs: int, recipe: str
) -> BatchHandle:
    """Send a scanned JSONL file as one batch of ``count`` inputs."""
    producer = service.producer
    enqueue = producer.enqueue_samples if recipe == "ace" else producer.enqueue_traces
    inputs = stream_inputs(path, recipe)
    try:
        if epochs > 1:
            # Later epochs are sent by workers from the batch's stored items: the producer needs them all.
            return enqueue(list(inputs), skillbook, epochs, recipe=recipe)
        return enqueue(inputs, skillbook, epochs, recipe=recipe, count=count)
    except BatchSizeError as exc:
        # The file changed between the two passes.
        raise typer.BadParameter(f"{path}: {exc}") from exc


def _settings(model: str | None) -> WorkerSettings:
    settings = WorkerSettings.from_env()
    if model:
        settings = dataclasses.replace(
            settings, agent_model=model, reflector_model=model, skill_manager_model=model
        )
    return settings


class NoWorkersError(AceError):
    """Work was about to be enqueued on a Redis no worker serves."""


def require_workers(service: Service, timeout: float = 3.0) -> None:
    """Raise NoWorkersError unless some worker answers and consumes every queue of the settings."""
    replies = service.app.control.inspect(timeout=timeout).active_queues() or {}
    served = {queue["name"] for queues in replies.values() for queue in queues}
    missing = sorted(set(service.runtime.settings.queue_names().values()) - served)
    if missing:
        raise NoWorkersError(
            f"no worker serves {', '.join(missing)}; start them with 'ace-workers worker --queues ...' "
            "(or unset ACE_REDIS_URL to run everything in-process)"
        )


@contextmanager
def _service(settings: WorkerSettings, *, run_workers: bool, learn_threads: int) -> Iterator[Service]:
    with resolve_redis(settings) as (broker_url, redis_url):
        service = build_service(settings, redis_url=redis_url, broker_url=broker_url)
        try:
            if run_workers:
                with local_workers(service, learn_threads=learn_threads):
                    yield service
            else:
                yield service
        finally:
            service.close()


def _follow(handle: BatchHandle, label: str) -> None:
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
        str, typer.Option(help="trace_analyser, ace, or package.module:function.")
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
    settings = _settings(model)
    count = scan_inputs(traces, recipe, settings)
    where = settings.redis_url or "an embedded Redis with in-process workers"
    console.print(f"learning [bold]{skillbook}[/] from {count} input(s) x {epochs} epoch(s) on {where}")
    with _service(settings, run_workers=settings.redis_url is None, learn_threads=learn_threads) as service:
        if settings.redis_url:
            require_workers(service)
        handle = _enqueue_file(service, traces, count, skillbook, epochs, recipe)
        _follow(handle, "learning")
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
        if out is not None:
            book.save_to_file(out)
            console.print(f"skillbook written to {out}")
        if markdown is not None:
            write_text_atomically(markdown, book.as_markdown())
            console.print(f"markdown written to {markdown}")
        if status.failed:
            raise typer.Exit(code=1)


def worker_command(
    queues: Annotated[
        str, typer.Option(help="Comma-separated queue roles: execute, learn, write.")
    ] = "execute,learn",
    concurrency: Annotated[int, typer.Option(min=1, help="Threads (or processes with --pool prefork).")] = 4,
    pool: Annotated[str, typer.Option(help="Celery pool: threads, prefork, solo.")] = "threads",
    force: Annotated[bool, typer.Option(help="Allow concurrency > 1 on the write queue (unsafe).")] = False,
    loglevel: Annotated[str, typer.Option(help="Celery log level.")] = "INFO",
    hostname: Annotated[
        str | None, typer.Option(help="Node name (default: ROLES@HOST, e.g. learn@host1; %h is the host).")
    ] = None,
    metrics_port: Annotated[
        int, typer.Option(min=0, help="Serve Prometheus metrics on this port (0: off; threads/solo pools).")
    ] = 0,
    log_format: Annotated[
        str | None, typer.Option(help="text (Celery's) or json, one object per line [ACE_LOG_FORMAT].")
    ] = None,
) -> None:
    """Run a Celery worker for some queue roles, with the project's settings (needs ACE_REDIS_URL)."""
    from .app import check_app_security, check_write_concurrency

    settings = WorkerSettings.from_env()
    log_format = _worker_log_format(log_format, settings, metrics_port, pool)
    if not settings.redis_url:
        raise typer.BadParameter("a worker needs ACE_REDIS_URL: it serves queues other processes fill")
    names = settings.queue_names()
    roles = [role.strip() for role in queues.split(",") if role.strip()]
    unknown = [role for role in roles if role not in names]
    if unknown or not roles:
        raise typer.BadParameter(f"unknown queue role(s) {unknown}: use {', '.join(names)}")
    check_write_concurrency([names[r] for r in roles], concurrency, force=force, write_queue=names["write"])
    with resolve_redis(settings) as (broker_url, redis_url):
        service = build_service(settings, redis_url=redis_url, broker_url=broker_url)
        check_app_security(service.app)
        _start_observability(service, log_format, loglevel, metrics_port)
        service.app.worker_main(
            [
                # json: no banner on stdout, so every line the worker writes is one JSON object.
                *(["--quiet"] if log_format == "json" else []),
                "worker",
                f"--queues={','.join(names[r] for r in roles)}",
                f"--concurrency={concurrency}",
                f"--pool={pool}",
                f"--loglevel={loglevel}",
                # Distinct default names per role, so Flower and `celery inspect` tell the workers apart.
                f"--hostname={hostname or '-'.join(roles) + '@%h'}",
            ]
        )


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


def _start_observability(service: Service, log_format: str, loglevel: str, metrics_port: int) -> None:
    """JSON logs (text leaves Celery's logging as it is) and the metrics endpoint, if asked for."""
    if log_format == "json":
        use_worker_logging("json", loglevel)
    if metrics_port:
        start_metrics_server(service.runtime.metrics, metrics_port)


def enqueue_command(
    traces: Annotated[Path, typer.Argument(help="JSONL file of traces (samples with --recipe ace).")],
    skillbook: Annotated[str, typer.Option(help="Name of the skillbook in Redis.")] = "default",
    epochs: Annotated[int, typer.Option(min=1)] = 1,
    recipe: Annotated[str, typer.Option()] = "trace_analyser",
) -> None:
    """Enqueue a JSONL file as one batch for running workers; print the batch id.

    The file is read twice, a line at a time: first every line is checked and counted,
    then the inputs are sent. The producer's memory does not grow with the file.
    """
    settings = WorkerSettings.from_env()
    if not settings.redis_url:
        raise typer.BadParameter("enqueue needs ACE_REDIS_URL (use 'learn' to run everything in-process)")
    count = scan_inputs(traces, recipe, settings)
    with _service(settings, run_workers=False, learn_threads=1) as service:
        require_workers(service)
        handle = _enqueue_file(service, traces, count, skillbook, epochs, recipe)
        typer.echo(handle.batch_id)


def status_command(batch_id: Annotated[str, typer.Argument(help="The id 'enqueue' printed.")]) -> None:
    """Show a batch's progress and its errors."""
    settings = WorkerSettings.from_env()
    with _service(settings, run_workers=False, learn_threads=1) as service:
        handle = BatchHandle(batch_id, service.runtime)
        try:
            status = handle.status()
        except LookupError as exc:
            raise typer.BadParameter(str(exc)) from exc
        console.print(
            f"batch {batch_id} on {status.skillbook!r} ({status.recipe}): {status.state.value}, "
            f"{status.done} done, {status.failed} failed, {status.running} running, "
            f"{status.queued} queued of {status.total}, "
            f"epoch {status.epoch}/{status.epochs}, {status.elapsed_seconds:.1f} s"
        )
        for error in handle.errors():
            console.print(
                f"[red]epoch {error['epoch']} sample {error['index']}: {error['step']}: {error['error']}[/]"
            )


def _store_or_fail(service: Service, name: str) -> Any:
    store = service.runtime.store(name)
    if not store.exists():
        known = (
            ", ".join(list_skillbooks(service.runtime.redis, service.runtime.settings.queue_prefix)) or "none"
        )
        raise typer.BadParameter(f"no skillbook named {name!r} in Redis (known: {known})")
    return store


@skillbook_app.command("list")
def skillbook_list() -> None:
    """List the skillbooks in Redis."""
    with _service(WorkerSettings.from_env(), run_workers=False, learn_threads=1) as service:
        for name in list_skillbooks(service.runtime.redis, service.runtime.settings.queue_prefix):
            typer.echo(name)


@skillbook_app.command("show")
def skillbook_show(name: str) -> None:
    """Print a skillbook as markdown, with its version."""
    with _service(WorkerSettings.from_env(), run_workers=False, learn_threads=1) as service:
        store = _store_or_fail(service, name)
        version, book = store.snapshot()
        console.print(f"skillbook {name!r} at version {version}")
        console.print(book.as_markdown(), markup=False)


@skillbook_app.command("export")
def skillbook_export(
    name: str,
    out: Annotated[Path, typer.Option(help="JSON file to write (atomically).")],
    markdown: Annotated[Path | None, typer.Option(help="Also write markdown here.")] = None,
) -> None:
    """Write a skillbook from Redis to a JSON file in the reference format."""
    with _service(WorkerSettings.from_env(), run_workers=False, learn_threads=1) as service:
        book = _store_or_fail(service, name).export()
        book.save_to_file(out)
        if markdown is not None:
            write_text_atomically(markdown, book.as_markdown())
        typer.echo(f"{len(book)} skill(s) written to {out}")


@skillbook_app.command("history")
def skillbook_history(name: str, limit: Annotated[int, typer.Option(min=1)] = 20) -> None:
    """The latest versions of a skillbook: what changed, from which sample."""
    with _service(WorkerSettings.from_env(), run_workers=False, learn_threads=1) as service:
        table = Table("version", "base", "operations", "source")
        for change in _store_or_fail(service, name).history(limit=limit):
            ops = ", ".join(
                [f"{op.type} {op.skill_id or op.section}" for op in change.operations]
                + [_consolidation_label(op) for op in change.consolidation]
            )
            ops = ops or f"({change.kind.value})"
            table.add_row(str(change.version), str(change.base_version), ops, json.dumps(change.source or {}))
        console.print(table)


@skillbook_app.command("dedup")
def skillbook_dedup(
    name: str,
    provider: Annotated[
        str | None,
        typer.Option(
            help="sentence_transformers or litellm [ACE_DEDUP_PROVIDER, else sentence_transformers]."
        ),
    ] = None,
    dry_run: Annotated[bool, typer.Option(help="Print the planned operations; change nothing.")] = False,
) -> None:
    """Consolidate near-duplicate skills (merge, delete, keep, update) as one new version."""
    settings = WorkerSettings.from_env()
    chosen = provider or (settings.dedup_provider if settings.dedup_provider != DEDUP_OFF else None)
    chosen = chosen or "sentence_transformers"
    if chosen not in DEDUP_PROVIDERS or chosen == DEDUP_OFF:
        raise typer.BadParameter(f"--provider {chosen!r}: use sentence_transformers or litellm")
    with _service(settings, run_workers=False, learn_threads=1) as service:
        store = _store_or_fail(service, name)
        try:
            manager = service.runtime.deduplicator(name, provider=chosen)
        except AceError as exc:
            raise typer.BadParameter(str(exc)) from exc
        book = service.runtime.skillbook(name)
        if dry_run:
            plan = manager.plan(book)
            for op in plan.operations:
                console.print(_consolidation_label(op.to_dict()), markup=False)
            typer.echo(f"{len(plan.operations)} operation(s) planned; nothing changed")
            return
        before = store.version()
        # Planned again if a worker removes or rewrites a named skill before it applies.
        with write_scope(dedup_write_scope({"command": "skillbook dedup"})):
            report = manager.deduplicate(book)
        if not report.changed:
            typer.echo(f"0 operation(s) planned; nothing changed (skillbook {name!r}, version {before})")
            return
        typer.echo(f"skillbook {name!r} version {book.refresh()}: {report.summary()}")


def _consolidation_label(op: dict[str, Any]) -> str:
    ids = op.get("merge_ids") or op.get("skill_ids") or [op.get("skill_id")]
    target = f"{op['keep_id']} <- " if op.get("keep_id") else ""
    return f"{op.get('type')} {target}{','.join(str(i) for i in ids)}"


@skillbook_app.command("rollback")
def skillbook_rollback(name: str, to_version: Annotated[int, typer.Option("--to", min=0)]) -> None:
    """Restore a skillbook to an earlier version, as a new version (history is kept)."""
    with _service(WorkerSettings.from_env(), run_workers=False, learn_threads=1) as service:
        store = _store_or_fail(service, name)
        try:
            version = store.rollback(to_version)
        except ValueError as exc:
            raise typer.BadParameter(str(exc)) from exc
        typer.echo(f"skillbook {name!r} rolled back to version {to_version}, now version {version}")


@dead_letters_app.command("list")
def dead_letters_list() -> None:
    """Show the parked messages: step, error, sample."""
    with _service(WorkerSettings.from_env(), run_workers=False, learn_threads=1) as service:
        key = dead_letters_key(service.runtime.settings.queue_prefix)
        letters: list[bytes] = service.runtime.redis.lrange(key, 0, -1)  # type: ignore[assignment]
        for position, raw in enumerate(letters):
            letter = json.loads(raw)
            typer.echo(
                f"{position}: {letter['step']}: {letter['error']} (batch {letter['kwargs']['batch_id']})"
            )


@dead_letters_app.command("retry")
def dead_letters_retry() -> None:
    """Send every parked message back to its step's queue (needs running workers)."""
    with _service(WorkerSettings.from_env(), run_workers=False, learn_threads=1) as service:
        key = dead_letters_key(service.runtime.settings.queue_prefix)
        client: redis.Redis = service.runtime.redis
        retried = 0
        # Only what is parked now: a retried step that fails again parks a new letter behind these.
        for _ in range(int(client.llen(key))):
            raw = client.lpop(key)
            if not isinstance(raw, bytes):
                break
            letter = json.loads(raw)
            kwargs = letter["kwargs"]
            # Resume the sample's chain at the failed step, so the steps after it run too.
            sample_chain(
                service.app,
                service.runtime,
                letter["payload"],
                recipe=kwargs["recipe"],
                skillbook=kwargs["skillbook"],
                batch_id=kwargs["batch_id"],
                epoch=kwargs["epoch"],
                sample_index=kwargs["sample_index"],
                start=kwargs["index"],
            ).apply_async()
            retried += 1
        typer.echo(f"{retried} message(s) sent back")


def register_commands(app: typer.Typer) -> None:
    """Add the distributed commands to the root ``ace-workers`` app."""
    app.command("learn")(learn_command)
    app.command("worker")(worker_command)
    app.command("enqueue")(enqueue_command)
    app.command("status")(status_command)
    app.command("flower")(flower_command)
    app.add_typer(skillbook_app, name="skillbook")
    app.add_typer(dead_letters_app, name="dead-letters")
    from .nightly_cli import register_nightly_commands  # it imports this module's helpers

    register_nightly_commands(app)
