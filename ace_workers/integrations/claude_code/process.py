"""Running the ``claude`` CLI in print mode and reading its JSON output.

``claude -p --output-format stream-json --verbose`` prints one JSON event per
line (``--verbose`` is required for stream-json in print mode);
``--output-format json`` prints one result object. The prompt goes on stdin,
as in ``echo "task" | claude -p``: a skillbook-laden prompt can be longer than
one command-line argument may be (128 KiB on Linux).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ...errors import MissingExecutableError

__all__ = [
    "CLAUDE_INSTALL_HINT",
    "ClaudeRun",
    "find_claude",
    "parse_json_lines",
    "print_mode_args",
    "run_claude",
]

logger = logging.getLogger(__name__)

CLAUDE_INSTALL_HINT = (
    "install Claude Code with 'npm install -g @anthropic-ai/claude-code', "
    "or pass executable= the path of the claude program"
)

# Enough line numbers to find the damage without flooding the log.
MAX_REPORTED_LINES = 20


@dataclass(frozen=True)
class ClaudeRun:
    """One run of the CLI: its exit code (None: killed at the timeout), JSON events, stderr."""

    returncode: int | None
    events: list[dict[str, Any]]
    bad_lines: list[int] = field(default_factory=list)
    stderr: str = ""
    duration_seconds: float = 0.0


def find_claude(executable: str, what: str) -> str:
    """The full path of ``executable`` (a name on PATH or a path).

    Raises:
        MissingExecutableError: naming what to install.
    """
    found = shutil.which(executable)
    if found is None:
        raise MissingExecutableError(what, executable, CLAUDE_INSTALL_HINT)
    return found


def print_mode_args(
    output_format: str,
    *,
    model: str | None = None,
    max_turns: int | None = None,
    allowed_tools: Sequence[str] | None = None,
    permission_mode: str | None = None,
    append_system_prompt: str | None = None,
    extra_args: Sequence[str] = (),
) -> list[str]:
    """The CLI arguments of one print-mode run (the prompt itself goes on stdin)."""
    args = ["-p", "--output-format", output_format]
    if output_format == "stream-json":
        args.append("--verbose")
    options = {
        "--model": model,
        "--max-turns": None if max_turns is None else str(max_turns),
        "--allowedTools": None if allowed_tools is None else ",".join(allowed_tools),
        "--permission-mode": permission_mode,
        "--append-system-prompt": append_system_prompt,
    }
    for flag, value in options.items():
        if value is not None:
            args += [flag, value]
    return [*args, *extra_args]


def run_claude(
    executable: str,
    args: Sequence[str],
    prompt: str,
    *,
    cwd: str | os.PathLike[str] | None = None,
    timeout: float | None = None,
) -> ClaudeRun:
    """Run the CLI with ``prompt`` on stdin; its stdout read as JSON lines, never raising for its failure.

    A run killed at ``timeout`` comes back with ``returncode`` None and what it printed until then.
    Lines that are not JSON objects are skipped and logged with their numbers.
    """
    started = time.monotonic()
    try:
        completed = subprocess.run(
            [executable, *args],
            input=prompt.encode("utf-8"),
            capture_output=True,
            cwd=cwd,
            timeout=timeout,
            check=False,
        )
        returncode: int | None = completed.returncode
        stdout, stderr = completed.stdout, completed.stderr
    except subprocess.TimeoutExpired as exc:
        returncode, stdout, stderr = None, _bytes(exc.stdout), _bytes(exc.stderr)
    events, bad_lines = parse_json_lines(stdout.decode("utf-8", errors="replace"))
    if bad_lines:
        shown = ", ".join(str(n) for n in bad_lines[:MAX_REPORTED_LINES])
        logger.warning(
            "%s: skipped %d output line(s) that are not JSON objects: line(s) %s%s",
            executable,
            len(bad_lines),
            shown,
            " and more" if len(bad_lines) > MAX_REPORTED_LINES else "",
        )
    return ClaudeRun(
        returncode=returncode,
        events=events,
        bad_lines=bad_lines,
        stderr=stderr.decode("utf-8", errors="replace"),
        duration_seconds=time.monotonic() - started,
    )


def parse_json_lines(text: str) -> tuple[list[dict[str, Any]], list[int]]:
    """The JSON objects of ``text``, one per line, and the numbers of the other non-blank lines."""
    events: list[dict[str, Any]] = []
    bad: list[int] = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except (ValueError, RecursionError):
            bad.append(number)
            continue
        if isinstance(value, dict):
            events.append(value)
        else:
            bad.append(number)
    return events, bad


def _bytes(value: bytes | str | None) -> bytes:
    if value is None:
        return b""
    return value.encode("utf-8") if isinstance(value, str) else value
