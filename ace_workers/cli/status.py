"""``ace-workers status``: a batch's progress and errors, its skillbook's fill, and who writes it."""

from __future__ import annotations

from typing import Annotated

import typer

from ..distributed.settings import WorkerSettings
from ..operations.batches import batch_report
from .access import ApiKeyOption, principal_of
from .failures import print_failures
from .fleet import open_command_fleet
from .options import JsonOption
from .output import console, describe_fill, print_json, printable

__all__ = ["status_command"]


def status_command(
    batch_id: Annotated[str, typer.Argument(help="The id 'enqueue' printed.")],
    as_json: JsonOption = False,
    api_key: ApiKeyOption = None,
) -> None:
    """Show a batch's progress and its errors, and whether its skillbook is full."""
    with open_command_fleet("status", "batches live in a shared Redis") as fleet:
        report = batch_report(fleet, principal_of(fleet, api_key), batch_id)
        settings = fleet.settings
    if as_json:
        print_json(report.to_dict())
        return
    status, write_queue, writers = report.status, report.write_queue, report.writers
    # The skillbook, recipe and errors come from Redis: printed escaped, never read as markup.
    console.print(
        f"batch {batch_id} on {printable(repr(status.skillbook))} ({printable(status.recipe)}): "
        f"{status.state.value}, "
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
