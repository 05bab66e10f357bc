"""Recorded agent sessions as ``enqueue`` inputs: Claude Code, OpenClaw and browser-use runs.

``enqueue PATH --format claude-code|openclaw|browser-use`` reads PATH, a
session file or a folder (every ``*.jsonl`` below it; ``*.json`` for
browser-use, whose ``AgentHistoryList.save_to_file`` writes one JSON object),
in path order, as one input per file: one file is one session. By default
each session is converted to its trace dict here, on the producer, and the
trace is sent (recipe ``trace_analyser``). With the format's own recipe
(``claude_code_traces``, ``openclaw_traces``, ``browser_use_traces``) the
session's raw events (or saved history) are sent instead and converted on the
workers.

Lines that are not JSON objects are skipped with a warning naming file and
line, and so is a browser-use file that is not a saved history; a session
with no message (no step) is skipped with a warning; none fails the run.
Like the JSONL inputs, sessions are read twice, one at a time: checked and
counted first, then sent.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from ..core.json_nesting import loads_bounded
from ..core.jsonl import SkippedLines
from ..counts import counted
from ..distributed.worker.errors import PayloadError
from ..errors import EmptySessionError
from .inputs import read_input_lines
from .output import print_warning

if TYPE_CHECKING:
    from ..distributed.settings import WorkerSettings

__all__ = [
    "INPUT_FORMATS",
    "SESSION_FORMATS",
    "SessionFormat",
    "check_format",
    "scan_sessions",
    "session_files",
    "session_trace",
    "stream_sessions",
]


@dataclass(frozen=True)
class SessionFormat:
    """How one agent's recorded sessions are found in a folder, read, and converted to traces."""

    pattern: str  # the files of a folder that are sessions
    read: Callable[..., Any]  # (file, *, warn) -> the session's raw value, or None when it is none
    convert: Callable[[Any, str], dict[str, Any]]  # (raw session, source name) -> trace dict
    recipe: str  # the recipe that converts the raw sessions on the workers
    has_events: Callable[[Any], bool] = bool  # (raw session) -> whether it holds anything to send


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
            f"trace_analyser or {SESSION_FORMATS[input_format].recipe}",
            param_hint="--recipe",
        )
    wanted = SESSION_FORMATS[input_format].recipe
    if recipe in {known.recipe for known in SESSION_FORMATS.values()} and recipe != wanted:
        raise typer.BadParameter(
            f"--recipe {recipe} converts other sessions: with --format {input_format} use {wanted} "
            "(convert on the workers) or trace_analyser (convert here)",
            param_hint="--recipe",
        )
    return input_format


def session_files(path: Path, pattern: str = "*.jsonl") -> list[Path]:
    """``path`` if it is a file, else every file matching ``pattern`` below the folder ``path``, sorted."""
    if path.is_file():
        return [path]
    if path.is_dir():
        files = sorted(p for p in path.rglob(pattern) if p.is_file())
        if not files:
            raise typer.BadParameter(f"{path} holds no {pattern} session file")
        return files
    raise typer.BadParameter(f"{path}: no such file or folder")


def scan_sessions(
    path: Path, input_format: str, recipe: str, settings: WorkerSettings, epochs: int = 1
) -> int:
    """The first pass: read, convert (unless the workers do) and check every session; count them.

    Raises:
        typer.BadParameter: a session too large or not JSON, none usable, or more than ACE_MAX_BATCH_SIZE.
    """
    # The payload check loads the core's context (and pydantic) when sessions are read, not for --help.
    from ..distributed.worker.payload import check_trace

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
            f"{path} holds {counted(count, 'session')} x {counted(epochs, 'epoch')}, "
            f"above ACE_MAX_BATCH_SIZE={limit}; "
            "nothing was sent"
        )
    return count


def stream_sessions(path: Path, input_format: str, recipe: str) -> Iterator[Any]:
    """The second pass: the inputs scan_sessions counted, one session at a time."""
    for _, value in _sessions(path, input_format, recipe, warn=False):
        yield value


def _sessions(path: Path, input_format: str, recipe: str, *, warn: bool) -> Iterator[tuple[Path, Any]]:
    """(file, input) per usable session: its raw events for the workers' recipe, else its trace."""
    session_format = SESSION_FORMATS[input_format]
    raw = recipe == session_format.recipe
    for file in session_files(path, session_format.pattern):
        events = session_format.read(file, warn=warn)
        if events is None:
            continue  # not a session at all: said by the reader
        if raw:
            if not session_format.has_events(events):
                if warn:
                    print_warning(f"{file}: skipped, no event in it")
                continue
            yield file, events
            continue
        trace = _converted(session_format, events, file, warn=warn)
        if trace is not None:
            yield file, trace


def session_trace(file: Path, input_format: str) -> dict[str, Any] | None:
    """One session file's trace, converted here; None, with a warning saying why, if it holds none."""
    session_format = SESSION_FORMATS[input_format]
    events = session_format.read(file, warn=True)
    return None if events is None else _converted(session_format, events, file, warn=True)


def _converted(
    session_format: SessionFormat, events: Any, file: Path, *, warn: bool
) -> dict[str, Any] | None:
    """The trace of one read session, its id the file's stem unless it has one; None if it is empty."""
    try:
        trace = session_format.convert(events, str(file))
    except EmptySessionError as exc:
        if warn:
            print_warning(f"skipped: {exc}")
        return None
    trace.setdefault("session_id", file.stem)
    return trace


def _read_history(file: Path, *, warn: bool) -> dict[str, Any] | None:
    """A saved browser-use history (one JSON object with a ``history`` list); None, with a warning, else."""
    from ..traces.browser_use.history import is_saved_history

    try:
        value = loads_bounded(file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:  # JSONDecodeError, UnicodeDecodeError, JsonNestingError
        reason = f"not JSON ({exc})"
    else:
        if is_saved_history(value):
            return dict(value)
        reason = "not a saved browser-use history (a JSON object with a 'history' list)"
    if warn:
        print_warning(f"{file}: skipped, {reason}")
    return None


def _read_events(file: Path, *, warn: bool) -> list[Any]:
    """The JSON objects of a session file; the other lines skipped, with one warning naming them."""
    skipped = SkippedLines(str(file))
    events = [event for _, event in read_input_lines(file, skipped, objects_only=True)]
    if warn and skipped:
        print_warning(skipped.describe())
    return events


# The converters import the trace packages (and the core's skillbook) when a session is converted.
def _claude_trace(events: Any, source: str) -> dict[str, Any]:
    from ..traces import claude_events_to_trace

    return claude_events_to_trace(events, source)


def _openclaw_trace(events: Any, source: str) -> dict[str, Any]:
    from ..traces import openclaw_events_to_trace

    return openclaw_events_to_trace(events, source)


def _browser_trace(history: Any, source: str) -> dict[str, Any]:
    from ..traces import browser_history_to_trace

    return browser_history_to_trace(history, source=source)


# Below the readers they name.
SESSION_FORMATS: dict[str, SessionFormat] = {
    "claude-code": SessionFormat("*.jsonl", _read_events, _claude_trace, "claude_code_traces"),
    "openclaw": SessionFormat("*.jsonl", _read_events, _openclaw_trace, "openclaw_traces"),
    "browser-use": SessionFormat(
        "*.json",
        _read_history,
        _browser_trace,
        "browser_use_traces",
        has_events=lambda saved: bool(saved["history"]),
    ),
}
INPUT_FORMATS = ("jsonl", *SESSION_FORMATS)
