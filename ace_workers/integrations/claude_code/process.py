"""Running the ``claude`` CLI in print mode and reading its JSON output.

``claude -p --output-format stream-json --verbose`` prints one JSON event per
line (``--verbose`` is required for stream-json in print mode);
``--output-format json`` prints one result object. The prompt goes on stdin,
as in ``echo "task" | claude -p``: a skillbook-laden prompt can be longer than
one command-line argument may be (128 KiB on Linux).
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ...core.jsonl import SkippedLines, iter_json_lines
from ...errors import MissingExecutableError

__all__ = [
    "CLAUDE_INSTALL_HINT",
    "ClaudeRun",
    "find_claude",
    "print_mode_args",
    "run_claude",
]

logger = logging.getLogger(__name__)

CLAUDE_INSTALL_HINT = (
    "install Claude Code with 'npm install -g @anthropic-ai/claude-code', "
    "or pass executable= the path of the claude program"
)


@dataclass(frozen=True)
class ClaudeRun:
    """One run of the CLI: its exit code (None: killed at the timeout), JSON events, stderr."""

    returncode: int | None
    events: list[dict[str, Any]]
    skipped_lines: int = 0
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
    Lines that are not JSON objects are skipped and logged with their numbers (one WARNING).
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
    skipped = SkippedLines(f"the output of {executable}")
    events = [event for _, event in iter_json_lines(stdout.split(b"\n"), skipped, objects_only=True)]
    if skipped:
        logger.warning("%s", skipped.describe())
    return ClaudeRun(
        returncode=returncode,
        events=events,
        skipped_lines=len(skipped),
        stderr=stderr.decode("utf-8", errors="replace"),
        duration_seconds=time.monotonic() - started,
    )


def _bytes(value: bytes | str | None) -> bytes:
    if value is None:
        return b""
    return value.encode("utf-8") if isinstance(value, str) else value
