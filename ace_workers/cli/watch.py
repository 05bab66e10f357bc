"""``status --watch``: a batch's state line, read again until the batch finishes.

In a terminal the line is redrawn in place; elsewhere (a pipe, a log file) it is printed once
per change, so a log holds the batch's history and not one line per second. Ctrl-C ends the
watch with exit 130 and no traceback: stopping to watch changes nothing in the batch.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import typer
from rich.live import Live
from rich.text import Text

from .exit_codes import EXIT_INTERRUPTED
from .output import console, printable

if TYPE_CHECKING:
    from ..distributed.producer.batch_report import BatchReport
    from ..distributed.store.batches import BatchStatus

__all__ = ["EXIT_INTERRUPTED", "describe_progress", "watch_batch"]


def describe_progress(status: BatchStatus) -> str:
    """The batch's state and counts in one line, without its clock (which changes every read)."""
    epoch = f"epoch {status.epoch}/{status.epochs}"
    return f"batch {status.batch_id}: {status.state.label}, {status.summary()}, {epoch}"


def watch_batch(
    read: Callable[[], BatchReport],
    *,
    interval: float,
    quiet: bool = False,
    sleep: Callable[[float], None] = time.sleep,
) -> BatchReport:
    """Read the report every ``interval`` seconds until its batch has finished; return the last one.

    ``quiet``: show nothing meanwhile (``--json`` prints only the last document).

    Raises:
        typer.Exit: 130, on Ctrl-C.
    """
    try:
        if quiet:
            return _poll(read, interval, sleep, lambda _line: None)
        if console.is_terminal:
            with Live(console=console, auto_refresh=False, transient=True) as live:
                return _poll(read, interval, sleep, lambda line: live.update(Text(line), refresh=True))
        last: list[str] = []

        def print_changed(line: str) -> None:
            if not last or last[-1] != line:
                last[:] = [line]
                typer.echo(line)

        return _poll(read, interval, sleep, print_changed)
    except KeyboardInterrupt:
        raise typer.Exit(EXIT_INTERRUPTED) from None


def _poll(
    read: Callable[[], BatchReport],
    interval: float,
    sleep: Callable[[float], None],
    show: Callable[[str], None],
) -> BatchReport:
    while True:
        report = read()
        show(printable(describe_progress(report.status)))
        if report.status.state.finished:
            return report
        sleep(interval)
