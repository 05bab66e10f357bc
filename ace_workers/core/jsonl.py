"""Reading JSON Lines: the one reader of every JSONL input, and one wording for the lines it skips.

Trace files (:class:`~ace_workers.steps.LoadTracesStep`), session transcripts
(the converters in :mod:`ace_workers.traces`), the CLI's input files and a
program's stream-json output are all read here. Blank lines are ignored; a
line that is not JSON (or, where only objects are wanted, a JSON value that
is not an object) is skipped and recorded in a :class:`SkippedLines`, which
reports them in one sentence naming the source and each line:
``skipped 2 lines of t.jsonl: line 2 (not JSON: Expecting value at column 1),
line 3 (a JSON list, not an object)``.

Lives in ``core`` so that the steps, the lowest of its users, import it without
an upward arrow.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ..counts import counted
from ..errors import JsonNestingError
from .json_nesting import loads_bounded

__all__ = ["MAX_REPORTED_LINES", "SkippedLines", "iter_json_lines", "iter_jsonl", "read_jsonl_objects"]

# Enough line numbers to find the damage without flooding the log for a wholly corrupt file.
MAX_REPORTED_LINES = 20


class SkippedLines:
    """The lines of one JSONL source that were skipped: how many, and the first few with why."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.count = 0
        self.first: list[tuple[int, str]] = []

    def add(self, number: int, reason: str) -> None:
        """Record that line ``number`` was skipped for ``reason``."""
        self.count += 1
        if len(self.first) < MAX_REPORTED_LINES:
            self.first.append((number, reason))

    def __len__(self) -> int:
        return self.count

    def describe(self) -> str:
        """The one wording of every reader: the source, how many lines, and each shown line with why."""
        shown = ", ".join(f"line {number} ({reason})" for number, reason in self.first)
        more = self.count - len(self.first)
        return f"skipped {counted(self.count, 'line')} of {self.source}: {shown}" + (
            f" and {more} more" if more > 0 else ""
        )


def iter_json_lines(
    lines: Iterable[bytes], skipped: SkippedLines, *, objects_only: bool = False
) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` per JSON line; other non-blank lines go to ``skipped``.

    Bytes, not text: ``str.splitlines`` would also split inside JSON strings at
    U+2028 and friends, and an undecodable line should cost that line, not the
    source. ``objects_only`` also skips JSON values that are not objects.
    """
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            value = loads_bounded(raw)
        except JsonNestingError:  # refused before the parser recursed (core/json_nesting.py)
            skipped.add(number, "not JSON: nested too deeply to read")
            continue
        except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, an int too long to convert
            skipped.add(number, f"not JSON: {_why_not_json(exc)}")
            continue
        if objects_only and not isinstance(value, dict):
            skipped.add(number, f"a JSON {type(value).__name__}, not an object")
            continue
        yield number, value


def iter_jsonl(path: Path, skipped: SkippedLines, *, objects_only: bool = False) -> Iterator[tuple[int, Any]]:
    """:func:`iter_json_lines` over a file, one line at a time: memory does not grow with the file.

    Raises:
        OSError: the file cannot be opened or read (FileNotFoundError naming the path).
    """
    with path.open("rb") as lines:
        yield from iter_json_lines(lines, skipped, objects_only=objects_only)


def read_jsonl_objects(path: Path) -> tuple[list[dict[str, Any]], SkippedLines]:
    """The JSON objects of a JSONL file in order, and the lines skipped (named by ``path``).

    Raises:
        OSError: the file cannot be opened or read (FileNotFoundError naming the path).
    """
    skipped = SkippedLines(str(path))
    objects = [value for _, value in iter_jsonl(path, skipped, objects_only=True)]
    return objects, skipped


def _why_not_json(exc: ValueError) -> str:
    # The column, not the message's "line 1 column 5": every line is line 1 to the parser.
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg.removesuffix(' at')} at column {exc.colno}"
    if isinstance(exc, UnicodeDecodeError):
        return f"not {exc.encoding} text ({exc.reason})"
    return str(exc)
