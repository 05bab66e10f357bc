"""``ace-workers learn``: learn a skillbook from a JSONL file, in-process or on a fleet, following it."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from ..distributed.producer.producer import BatchHandle
from ..distributed.settings import DEDUP_OFF, WorkerSettings
from ..distributed.store.batches import BatchState
from .common import (
    check_output_path,
    check_recipe,
    check_skillbook_name,
    console,
    enqueue_file,
    open_service,
    require_workers,
    scan_inputs,
    settings_for_model,
    write_skillbook_files,
)
from .failures import print_failures
from .models import refuse_unusable_models

__all__ = ["dedup_hint", "follow_batch", "learn_command"]


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
    if settings.redis_url is None:
        # The in-process workers call these models; with ACE_REDIS_URL the fleet's workers
        # call their own, and checked them when they started.
        refuse_unusable_models(settings)
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
        errors = handle.errors()
        if status.total and status.failed >= status.total:
            # Nothing was learned, and a skillbook no sample wrote does not exist: say only why.
            print_failures(handle.batch_id, errors, total=status.total)
            raise typer.Exit(code=1)
        store = service.runtime.store(skillbook)
        version, book = store.snapshot()  # version 0, empty: every sample ran and none added a skill
        table = _accuracy_table(handle)
        if table is not None:
            console.print(table)
        console.print(
            f"batch {handle.batch_id}: {status.done} done, {status.failed} failed in "
            f"{status.elapsed_seconds:.1f} s; skillbook {skillbook!r} at version {version} "
            f"with {len(book)} skill(s)"
        )
        print_failures(handle.batch_id, errors, total=status.total)
        console.print(book.as_markdown(), markup=False)
        write_skillbook_files(book, out, markdown)
        for path, what in ((out, "skillbook"), (markdown, "markdown")):
            if path is not None:
                console.print(f"{what} written to {path}")
        if status.failed:
            raise typer.Exit(code=1)
