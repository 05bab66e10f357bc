"""``ace-workers status``: a batch's progress and errors, its skillbook's fill, and who writes it."""

from __future__ import annotations

from typing import Annotated

import typer

from ..distributed.producer.batch_report import BatchReport
from ..distributed.settings import WorkerSettings
from ..operations.batches import batch_report
from .access import ApiKeyOption, principal_of
from .failures import print_failures
from .fleet import open_command_fleet
from .options import JsonOption
from .output import console, describe_fill, print_json, printable
from .watch import watch_batch

__all__ = ["status_command"]


def status_command(
    batch_id: Annotated[str, typer.Argument(help="The id 'enqueue' printed.")],
    watch: Annotated[
        bool,
        typer.Option(
            "--watch",
            help="Read the batch again until it finishes, then report it: in a terminal its line is "
            "redrawn, elsewhere printed once per change (with --json, only the last document). "
            "Ctrl-C stops watching (exit 130); the batch goes on.",
        ),
    ] = False,
    interval: Annotated[float, typer.Option(min=0.1, help="Seconds between two reads of --watch.")] = 2.0,
    as_json: JsonOption = False,
    api_key: ApiKeyOption = None,
) -> None:
    """Show a batch's progress and its errors, and whether its skillbook is full.

    The state is running, done, done with failures (some samples failed), failed (all did) or
    cancelled; the exit status is 1 for a batch with failed samples.
    """
    with open_command_fleet("status", "batches live in a shared Redis") as fleet:
        principal = principal_of(fleet, api_key)
        if watch:
            report = watch_batch(
                lambda: batch_report(fleet, principal, batch_id), interval=interval, quiet=as_json
            )
        else:
            report = batch_report(fleet, principal, batch_id)
        settings = fleet.settings
    if as_json:
        print_json(report.to_dict())
    else:
        _print_report(settings, batch_id, report)
    if report.status.state.failures:
        raise typer.Exit(code=1)


def _print_report(settings: WorkerSettings, batch_id: str, report: BatchReport) -> None:
    status, write_queue, writers = report.status, report.write_queue, report.writers
    # The skillbook, recipe and errors come from Redis: printed escaped, never read as markup.
    console.print(
        f"batch {batch_id} on {printable(repr(status.skillbook))} ({printable(status.recipe)}): "
        f"{status.state.label}, "
        f"{status.summary()}, "
        f"epoch {status.epoch}/{status.epochs}, {status.elapsed_seconds:.1f} s",
        markup=False,
    )
    console.print(_describe_writer(settings, status.skillbook, write_queue, writers))
    full = describe_fill(status.skillbook, report.fill)
    if full:
        console.print(f"[yellow]{full}[/]")
    print_failures(batch_id, report.errors, total=status.total)


def _describe_writer(settings: WorkerSettings, skillbook: str, queue: str, writers: list[str]) -> str:
    """Where the skillbook's writes go and who serves that queue (as the workers' records in Redis
    say); a warning if nobody does."""
    partitions = settings.write_partitions
    where = f"partition {queue.rsplit('.', 1)[-1]} of {partitions}, " if partitions > 1 else ""
    if writers:
        return f"writes of {skillbook!r} go to {queue} ({where}served by {', '.join(writers)})"
    start = f"--queues write --partition {queue.rsplit('.', 1)[-1]}" if partitions > 1 else "--queues write"
    return (
        f"[yellow]writes of {skillbook!r} go to {queue} ({where}no worker serves it: "
        f"start one with 'ace-workers worker {start} --concurrency 1')[/]"
    )
