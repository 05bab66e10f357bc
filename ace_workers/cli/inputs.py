"""Reading JSONL inputs: a first pass that checks and counts them, a second that streams them."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import typer

from ..core.environments import Sample
from ..core.jsonl import SkippedLines, iter_jsonl
from ..distributed.settings import WorkerSettings
from ..distributed.worker.errors import PayloadError
from ..distributed.worker.payload import check_trace
from .output import print_warning

__all__ = ["read_input_lines", "sample_from_line", "scan_inputs", "skipped_lines_reported", "stream_inputs"]


def read_input_lines(
    path: Path, skipped: SkippedLines, *, objects_only: bool = False
) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` per JSON line of a JSONL input (core.jsonl's reader); others to ``skipped``.

    A file that cannot be read is a usage error naming it, not a traceback.
    """
    try:
        yield from iter_jsonl(path, skipped, objects_only=objects_only)
    except OSError as exc:
        raise typer.BadParameter(f"cannot read {path}: {exc.strerror or exc}") from exc


@contextmanager
def skipped_lines_reported(path: Path) -> Iterator[SkippedLines]:
    """A record of the lines of ``path`` a reading skips, printed as one warning when the reading ends.

    Printed even when the reading ends in an error, so the lines skipped before it are not lost.
    """
    skipped = SkippedLines(str(path))
    try:
        yield skipped
    finally:
        if skipped:
            print_warning(skipped.describe())


def sample_from_line(item: Any, path: Path, number: int) -> Sample:
    names = {f.name for f in dataclasses.fields(Sample)}
    if not isinstance(item, dict) or "question" not in item or set(item) - names:
        raise typer.BadParameter(
            f"{path}:{number}: not a sample (an object with 'question' and only {', '.join(sorted(names))})"
        )
    return Sample(**item)


def scan_inputs(path: Path, recipe: str, settings: WorkerSettings, epochs: int = 1) -> int:
    """The first pass over a JSONL input: check every line, warn of lines that are not JSON; count inputs.

    Nothing is sent yet. A trace too large or not JSON all the way down, a record that is
    not a sample (``recipe`` ace), no usable line, or more samples (inputs x ``epochs``)
    than ACE_MAX_BATCH_SIZE is an error naming the file (and the line).
    """
    limit = settings.max_batch_size
    if epochs > limit:  # refused before the file is read
        raise typer.BadParameter(
            f"{epochs} epochs is above ACE_MAX_BATCH_SIZE={limit} samples", param_hint="--epochs"
        )
    count = 0
    with skipped_lines_reported(path) as skipped:
        for number, value in read_input_lines(path, skipped):
            if recipe == "ace":
                sample_from_line(value, path, number)
            else:
                try:
                    check_trace(value, max_bytes=settings.max_trace_bytes)
                except PayloadError as exc:
                    raise typer.BadParameter(f"{path}:{number}: {exc}") from exc
            count += 1
    if not count:
        raise typer.BadParameter(f"{path} holds no usable line")
    if count * epochs > limit:
        times = f" x {epochs} epochs = {count * epochs} samples" if epochs > 1 else ""
        raise typer.BadParameter(
            f"{path} holds {count} inputs{times}, above ACE_MAX_BATCH_SIZE={limit}; nothing "
            "was sent (split the file, or raise the limit)"
        )
    return count


def stream_inputs(path: Path, recipe: str) -> Iterator[Any]:
    """The second pass: the inputs of a JSONL file checked by scan_inputs, one line at a time."""
    # The first pass reported the skipped lines already.
    for number, value in read_input_lines(path, SkippedLines(str(path))):
        yield sample_from_line(value, path, number) if recipe == "ace" else value
