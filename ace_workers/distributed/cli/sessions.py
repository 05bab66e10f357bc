"""Recorded agent sessions as ``enqueue`` inputs: Claude Code transcripts and OpenClaw session files.

``enqueue PATH --format claude-code|openclaw`` reads PATH, a session file or
a folder (every ``*.jsonl`` below it, in path order), as one input per file:
one file is one session. By default each session is converted to its trace
dict here, on the producer, and the trace is sent (recipe ``trace_analyser``).
With the format's own recipe (``claude_code_traces``, ``openclaw_traces``)
the session's raw events are sent instead and converted on the workers.

Lines that are not JSON objects are skipped with a warning naming file and
line; a session with no message is skipped with a warning; neither fails the
file. Like the JSONL inputs, sessions are read twice, one at a time: checked
and counted first, then sent.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import typer

from ...errors import EmptySessionError
from ...integrations.claude_code import claude_events_to_trace
from ...integrations.openclaw import openclaw_events_to_trace
from ..settings import WorkerSettings
from ..worker.errors import PayloadError
from ..worker.payload import check_trace
from .common import console, iter_jsonl

__all__ = [
    "INPUT_FORMATS",
    "SESSION_RECIPES",
    "check_format",
    "scan_sessions",
    "session_files",
    "stream_sessions",
]

INPUT_FORMATS = ("jsonl", "claude-code", "openclaw")

# The recipe that converts a format's raw sessions on the workers.
SESSION_RECIPES = {"claude-code": "claude_code_traces", "openclaw": "openclaw_traces"}

_CONVERTERS: dict[str, Callable[[list[Any], str], dict[str, Any]]] = {
    "claude-code": claude_events_to_trace,
    "openclaw": openclaw_events_to_trace,
}


def check_format(input_format: str, recipe: str) -> str:
    """``input_format`` if it is known and fits ``recipe``; a usage error naming both otherwise."""
    if input_format not in INPUT_FORMATS:
        raise typer.BadParameter(
            f"unknown format {input_format!r}: use {', '.join(INPUT_FORMATS)}", param_hint="--format"
        )
    if input_format == "jsonl":
        return input_format
    if recipe == "ace":
        raise typer.BadParameter(
            "--recipe ace takes samples (question, ground_truth): recorded sessions go with "
            f"trace_analyser or {SESSION_RECIPES[input_format]}",
            param_hint="--recipe",
        )
    wanted = SESSION_RECIPES[input_format]
    if recipe in SESSION_RECIPES.values() and recipe != wanted:
        raise typer.BadParameter(
            f"--recipe {recipe} converts other sessions: with --format {input_format} use {wanted} "
            "(convert on the workers) or trace_analyser (convert here)",
            param_hint="--recipe",
        )
    return input_format


def session_files(path: Path) -> list[Path]:
    """``path`` if it is a file, else every ``*.jsonl`` below the folder ``path``, sorted."""
    if path.is_file():
        return [path]
    if path.is_dir():
        files = sorted(p for p in path.rglob("*.jsonl") if p.is_file())
        if not files:
            raise typer.BadParameter(f"{path} holds no *.jsonl session file")
        return files
    raise typer.BadParameter(f"{path}: no such file or folder")


def scan_sessions(
    path: Path, input_format: str, recipe: str, settings: WorkerSettings, epochs: int = 1
) -> int:
    """The first pass: read, convert (unless the workers do) and check every session; count them.

    Raises:
        typer.BadParameter: a session too large or not JSON, none usable, or more than ACE_MAX_BATCH_SIZE.
    """
    limit = settings.max_batch_size
    if epochs > limit:
        raise typer.BadParameter(
            f"{epochs} epochs is above ACE_MAX_BATCH_SIZE={limit} samples", param_hint="--epochs"
        )
    count = 0
    for file, value in _sessions(path, input_format, recipe, warn=True):
        try:
            check_trace(value, max_bytes=settings.max_trace_bytes)
        except PayloadError as exc:
            raise typer.BadParameter(f"{file}: {exc}") from exc
        count += 1
    if not count:
        raise typer.BadParameter(f"{path} holds no usable session")
    if count * epochs > limit:
        raise typer.BadParameter(
            f"{path} holds {count} sessions x {epochs} epoch(s), above ACE_MAX_BATCH_SIZE={limit}; "
            "nothing was sent"
        )
    return count


def stream_sessions(path: Path, input_format: str, recipe: str) -> Iterator[Any]:
    """The second pass: the inputs scan_sessions counted, one session at a time."""
    for _, value in _sessions(path, input_format, recipe, warn=False):
        yield value


def _sessions(path: Path, input_format: str, recipe: str, *, warn: bool) -> Iterator[tuple[Path, Any]]:
    """(file, input) per usable session: its raw events for the workers' recipe, else its trace."""
    raw = recipe == SESSION_RECIPES[input_format]
    convert = _CONVERTERS[input_format]
    for file in session_files(path):
        events = _read_events(file, warn=warn)
        if raw:
            if events:
                yield file, events
            elif warn:
                console.print(f"{file}: skipped, no event in it", style="yellow", markup=False)
            continue
        try:
            trace = convert(events, str(file))
        except EmptySessionError as exc:
            if warn:
                console.print(f"skipped: {exc}", style="yellow", markup=False)
            continue
        trace.setdefault("session_id", file.stem)
        yield file, trace


def _read_events(file: Path, *, warn: bool) -> list[Any]:
    """The JSON objects of a session file; other lines skipped with a warning naming file and line."""
    events: list[Any] = []
    for number, value, error in iter_jsonl(file):
        if error is None and isinstance(value, dict):
            events.append(value)
        elif warn:
            reason = (
                f"not JSON ({error})"
                if error is not None
                else f"a JSON {type(value).__name__}, not an object"
            )
            console.print(f"{file}:{number}: skipped, {reason}", style="yellow", markup=False)
    return events
