"""Reading JSONL inputs: a first pass that checks and counts them, a second that streams them."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from ..core.jsonl import SkippedLines, iter_jsonl
from ..counts import noun_for
from ..distributed.worker.errors import PayloadError
from .output import print_warning

if TYPE_CHECKING:
    from ..core.environments import Sample
    from ..distributed.settings import WorkerSettings

__all__ = [
    "check_trace_line",
    "json_kind",
    "read_input_lines",
    "sample_from_line",
    "scan_inputs",
    "skipped_lines_reported",
    "stream_inputs",
]


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


def json_kind(value: Any) -> str:
    """What JSON calls ``value``'s type: object, array, string, number, boolean, null."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    kinds = {dict: "object", list: "array", str: "string", int: "number", float: "number"}
    return kinds.get(type(value), type(value).__name__)


def sample_from_line(item: Any, path: Path, number: int) -> Sample:
    """The sample a line of ``path`` holds; a usage error naming the line and what is missing or extra."""
    # The core's sample types (and pydantic) load when a line is read, not for --help.
    from ..core.environments import Sample

    names = {f.name for f in dataclasses.fields(Sample)}
    others = ", ".join(sorted(names - {"question"}))
    shape = f"a sample is an object with 'question' and optionally {others}"
    if not isinstance(item, dict):
        raise typer.BadParameter(f"{path}:{number}: a JSON {json_kind(item)}, not a sample: {shape}")
    if "question" not in item:
        raise typer.BadParameter(f"{path}:{number}: not a sample: 'question' is missing ({shape})")
    extra = sorted(set(item) - names)
    if extra:
        unknown = ", ".join(repr(name) for name in extra)
        raise typer.BadParameter(
            f"{path}:{number}: not a sample: unknown {noun_for(len(extra), 'field')} {unknown} ({shape})"
        )
    return Sample(**item)


def check_trace_line(value: Any, path: Path, number: int, max_bytes: int) -> None:
    """A usage error naming the line of ``path`` unless ``value`` is a trace: a JSON object, at most
    ``max_bytes``, JSON all the way down."""
    from ..distributed.worker.payload import check_trace  # loads the core's context: only when read

    try:
        check_trace(value, max_bytes=max_bytes)
    except PayloadError as exc:
        raise typer.BadParameter(f"{path}:{number}: {exc}") from exc
    if not isinstance(value, dict):
        # A bare list or string would be learned from as if it were a trace, and counted done.
        raise typer.BadParameter(
            f"{path}:{number}: a JSON {json_kind(value)}, not a trace: each line must be a JSON object "
            "holding one trace's fields (e.g. question, answer, feedback)"
        )


def scan_inputs(path: Path, recipe: str, settings: WorkerSettings, epochs: int = 1) -> int:
    """The first pass over a JSONL input: check every line, warn of lines that are not JSON; count inputs.

    Nothing is sent yet. A trace that is not a JSON object, too large or not JSON all the way
    down, a record that is not a sample (``recipe`` ace), no usable line, or more samples
    (inputs x ``epochs``) than ACE_MAX_BATCH_SIZE is an error naming the file (and the line).
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
                check_trace_line(value, path, number, settings.max_trace_bytes)
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
