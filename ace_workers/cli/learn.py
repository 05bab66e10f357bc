"""``ace-workers learn``: learn a skillbook from a JSONL file, in-process or on a fleet, following it."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from ..counts import counted
from ..distributed.settings import DEDUP_OFF, WorkerSettings
from .exit_codes import EXIT_INTERRUPTED
from .failures import print_failures
from .inputs import scan_inputs
from .models import refuse_model_not_run, refuse_unusable_models
from .options import (
    CanaryOption,
    JsonOption,
    check_output_path,
    check_recipe,
    check_skillbook_ref,
    settings_for_model,
)
from .output import console, err_console, new_table, print_json, print_table, write_skillbook_files
from .service import enqueue_file, open_service, require_workers

# Types only: the skillbook model and the store load when a run reports, not for --help.
if TYPE_CHECKING:
    from ..core.skillbook import Skillbook
    from ..distributed.producer.producer import BatchHandle
    from ..distributed.service import Service
    from ..distributed.store.batches import BatchStatus

__all__ = ["accuracy_by_epoch", "dedup_hint", "follow_batch", "interrupted_line", "learn_command"]


def follow_batch(handle: BatchHandle, label: str) -> None:
    """Show a progress bar on stderr until the batch is done."""
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[detail]}"),
        TimeElapsedColumn(),
        console=err_console,
    ) as progress:
        status = handle.status()
        task = progress.add_task(label, total=status.total or None, detail="")
        while True:
            status = handle.status()
            waiting = status.waiting_for_budget
            detail = (
                f"epoch {status.epoch}/{status.epochs}, queued {status.queued}, "
                f"running {status.running}, failed {status.failed}"
                + (f", waiting for budget {waiting}" if waiting else "")
            )
            progress.update(
                task, completed=status.done + status.failed, total=status.total or None, detail=detail
            )
            if status.state.finished:
                return
            time.sleep(0.1)


def accuracy_by_epoch(handle: BatchHandle) -> dict[int, float]:
    """The share of right answers in each epoch, of the samples the agent answered (none: empty)."""
    outputs = [r.output for r in handle.results() if r.output is not None and r.output.agent_output]
    accuracy = {}
    for epoch in sorted({o.epoch for o in outputs}):
        outs = [o for o in outputs if o.epoch == epoch]
        right = [
            o
            for o in outs
            if o.agent_output is not None
            and o.sample is not None
            and o.agent_output.final_answer == o.sample.ground_truth
        ]
        accuracy[epoch] = len(right) / len(outs)
    return accuracy


def _accuracy_table(accuracy: dict[int, float]) -> Table | None:
    if not accuracy:
        return None
    table = new_table("epoch", "accuracy", "")
    for epoch, value in accuracy.items():
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


def interrupted_line(service: Service, batch_id: str, *, on_fleet: bool) -> str:
    """What a ``learn`` stopped by Ctrl-C says of its batch: where it stands, how to follow or cancel it."""
    if not service.runtime.batches.exists(batch_id):
        return f"interrupted before batch {batch_id} was created: nothing was sent"
    if not on_fleet:
        return f"interrupted: batch {batch_id} stops with the in-process workers of this run"
    return (
        f"interrupted: batch {batch_id} goes on on the workers; follow it with "
        f"'ace-workers status {batch_id}' or cancel it with 'ace-workers batch cancel {batch_id}'"
    )


def learn_command(
    traces: Annotated[
        Path, typer.Argument(help="JSONL file: one trace (or, with --recipe ace, one sample) per line.")
    ],
    skillbook: Annotated[
        str,
        typer.Option(help="Name of the skillbook in Redis; NAME@LABEL: the agent is served LABEL's version."),
    ] = "default",
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
    canary: CanaryOption = None,
    as_json: JsonOption = False,
) -> None:
    """Learn a skillbook from a JSONL file through the distributed pipeline.

    Without ACE_REDIS_URL it starts an embedded Redis and in-process workers for
    all three queues; with it, it only enqueues and follows while your workers learn.
    The result (accuracy, counts, the skillbook; with --json one JSON document) goes to
    stdout, the progress and warnings to stderr.
    """
    settings = settings_for_model(model)
    served_by, skillbook = skillbook, check_skillbook_ref(skillbook).name  # learning writes the head
    check_recipe(recipe, settings)
    if settings.redis_url is None:
        # The in-process workers call these models.
        refuse_unusable_models(settings)
    elif model is not None:
        # The fleet's workers call their own (and checked them when they started): a --model
        # they do not run is refused, never silently replaced by theirs.
        refuse_model_not_run(settings, recipe, model)
    check_output_path(out, "--out")
    check_output_path(markdown, "--markdown")
    count = scan_inputs(traces, recipe, settings, epochs)
    with open_service(
        settings, run_workers=settings.redis_url is None, learn_threads=learn_threads
    ) as service:
        batch_id = uuid.uuid4().hex  # known before sending: an interrupted run still names its batch
        try:
            if settings.redis_url:
                require_workers(service, recipe, skillbook)
            # Said once Redis and the workers answered: a run refused before says only why.
            where = settings.redis_url or "an embedded Redis with in-process workers"
            err_console.print(
                f"learning [bold]{skillbook}[/] from {counted(count, 'input')} x {counted(epochs, 'epoch')} "
                f"on {where}"
            )
            hint = dedup_hint(settings)
            if hint:
                err_console.print(hint)
            handle = enqueue_file(service, traces, count, served_by, epochs, recipe, canary, batch_id)
            follow_batch(handle, "learning")
        except KeyboardInterrupt:
            err_console.print(interrupted_line(service, batch_id, on_fleet=settings.redis_url is not None))
            raise typer.Exit(code=EXIT_INTERRUPTED) from None
        status = handle.status()
        errors = handle.errors()
        if status.total and status.failed >= status.total and not as_json:
            # Nothing was learned, and a skillbook no sample wrote does not exist: say only why.
            print_failures(handle.batch_id, errors, total=status.total)
            raise typer.Exit(code=1)
        store = service.runtime.store(skillbook)
        version, book = store.snapshot()  # version 0, empty: every sample ran and none added a skill
        accuracy = accuracy_by_epoch(handle)
        write_skillbook_files(book, out, markdown)
        result = _LearnResult(handle.batch_id, skillbook, recipe, status, errors, version, book, accuracy)
        if as_json:
            _print_json_result(result, out, markdown)
        else:
            _print_text_result(result, out, markdown)
        if status.failed:
            raise typer.Exit(code=1)


@dataclass(frozen=True)
class _LearnResult:
    """What one ``learn`` run reports."""

    batch_id: str
    skillbook: str
    recipe: str
    status: BatchStatus
    errors: list[dict[str, Any]]
    version: int
    book: Skillbook
    accuracy: dict[int, float]


def _print_json_result(result: _LearnResult, out: Path | None, markdown: Path | None) -> None:
    status = result.status
    print_json(
        {
            "batch_id": result.batch_id,
            "skillbook": result.skillbook,
            "recipe": result.recipe,
            "state": status.state.value,
            "total": status.total,
            **status.counts(),
            "elapsed_seconds": round(status.elapsed_seconds, 3),
            "accuracy": {str(epoch): value for epoch, value in result.accuracy.items()},
            "errors": result.errors,
            "version": result.version,
            "written": {"out": str(out) if out else None, "markdown": str(markdown) if markdown else None},
            "book": result.book.to_dict(),
        }
    )


def _print_text_result(result: _LearnResult, out: Path | None, markdown: Path | None) -> None:
    status, book = result.status, result.book
    table = _accuracy_table(result.accuracy)
    if table is not None:
        print_table(table)
    console.print(
        f"batch {result.batch_id}: {status.done} done, {status.failed} failed in "
        f"{status.elapsed_seconds:.1f} s; skillbook {result.skillbook!r} at version {result.version} "
        f"with {counted(len(book), 'skill')}"
    )
    print_failures(result.batch_id, result.errors, total=status.total)
    console.print(book.as_markdown(), markup=False)
    for path, what in ((out, "skillbook"), (markdown, "markdown")):
        if path is not None:
            console.print(f"{what} written to {path}")
