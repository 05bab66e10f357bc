"""LoadTracesStep: read a JSONL trace file into a list of event dicts."""

from __future__ import annotations

import errno
import json
import logging
import os
from pathlib import Path
from typing import Any

from ..core.context import ACEStepContext
from ._checks import MissingFieldError

__all__ = ["LoadTracesStep", "read_jsonl_objects"]

logger = logging.getLogger(__name__)

# Enough line numbers to find the damage without flooding the log for a wholly corrupt file.
MAX_REPORTED_LINES = 20


class LoadTracesStep:
    """Provide ``trace``: one dict per JSON-object line of the file named by ``ctx.sample``.

    ``ctx.sample`` is a path (str or PathLike) or an object with a ``path``
    attribute. Blank lines are ignored. Lines that are not JSON, or are JSON
    but not an object, are skipped and reported in one WARNING naming the
    file and each line number. A missing file fails the sample with
    FileNotFoundError naming the path.
    """

    requires = frozenset({"sample"})
    provides = frozenset({"trace"})

    def __call__(self, ctx: ACEStepContext) -> ACEStepContext:
        path = _path_of(ctx.sample)
        events, bad_lines = read_jsonl_objects(path)
        if bad_lines:
            shown = ", ".join(
                f"line {number} ({reason})" for number, reason in bad_lines[:MAX_REPORTED_LINES]
            )
            more = len(bad_lines) - MAX_REPORTED_LINES
            logger.warning(
                "LoadTracesStep: skipped %d line(s) of %s that are not JSON objects: %s%s",
                len(bad_lines),
                path,
                shown,
                f" and {more} more" if more > 0 else "",
            )
        return ctx.replace(trace=events)

    def __repr__(self) -> str:
        return "LoadTracesStep()"


def read_jsonl_objects(path: Path) -> tuple[list[dict[str, Any]], list[tuple[int, str]]]:
    """The JSON objects of a JSONL file, and ``(line number, reason)`` for each line skipped.

    Raises:
        FileNotFoundError: naming the path.
    """
    events: list[dict[str, Any]] = []
    bad_lines: list[tuple[int, str]] = []
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        raise FileNotFoundError(errno.ENOENT, "LoadTracesStep: trace file not found", str(path)) from None
    # Bytes, not text: str.splitlines would also split inside JSON strings at U+2028 and friends,
    # and an undecodable line should cost that line, not the file.
    with handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            try:
                value = json.loads(raw)
            except (ValueError, RecursionError) as exc:  # JSONDecodeError and UnicodeDecodeError
                bad_lines.append((number, f"not JSON: {type(exc).__name__}"))
                continue
            if isinstance(value, dict):
                events.append(value)
            else:
                bad_lines.append((number, f"a JSON {type(value).__name__}, not an object"))
    return events, bad_lines


def _path_of(sample: object) -> Path:
    if sample is None:
        raise MissingFieldError("LoadTracesStep", "sample")
    target = getattr(sample, "path", sample)
    if isinstance(target, (str, os.PathLike)):
        return Path(target)
    raise TypeError(
        "LoadTracesStep needs ctx.sample to be a path (str or PathLike) or an object with a "
        f"'path' attribute, got {type(sample).__name__}"
    )
