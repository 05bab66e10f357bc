"""``status --watch``: until the batch finishes; a line per change off a terminal; Ctrl-C is 130."""

from __future__ import annotations

import os
import pty
import queue
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO

import pytest
import redis

from tests.support.batches import ledger, ledger_batch
from tests.support.processes import terminate

PREFIX = "cliwatch"
CLI = [sys.executable, "-c", "from ace_workers.cli import main; main()"]
TIMEOUT = 30


@pytest.fixture
def cli_settings() -> dict[str, str]:
    """``env`` (tests/support/cli_env.py) under this module's prefix."""
    return {"ACE_QUEUE_PREFIX": PREFIX}


class Lines:
    """The lines a process prints, read by a thread so that a test waits for one with a timeout."""

    def __init__(self, stream: IO[str]) -> None:
        self._lines: queue.Queue[str] = queue.Queue()
        self._reader = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._reader.start()

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            self._lines.put(line.rstrip("\n"))

    def next(self) -> str:
        return self._lines.get(timeout=TIMEOUT)

    def join(self) -> None:
        """Wait for the end of the stream (the process has ended)."""
        self._reader.join(timeout=TIMEOUT)


@contextmanager
def watching(batch_id: str) -> Iterator[tuple[subprocess.Popen[str], Lines]]:
    """``ace-workers status BATCH --watch`` with its stdout a pipe (not a terminal)."""
    with subprocess.Popen(
        [*CLI, "status", batch_id, "--watch", "--interval", "0.1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as process:
        assert process.stdout is not None
        lines = Lines(process.stdout)
        try:
            yield process, lines
        finally:
            terminate(process)  # type: ignore[arg-type]
            lines.join()


def test_off_a_terminal_watch_prints_a_line_per_change_and_ends_with_the_report(
    env: pytest.MonkeyPatch, redis_client: redis.Redis
) -> None:
    batches = ledger_batch(redis_client, PREFIX, "b1", unfinished=2)
    with watching("b1") as (process, lines):
        assert lines.next() == "batch b1: running, 0 done, 0 failed, 0 running, 2 queued of 2, epoch 1/1"
        batches.record_done("b1", 1, 1, {"answer": "a"})
        assert lines.next() == "batch b1: running, 1 done, 0 failed, 0 running, 1 queued of 2, epoch 1/1"
        batches.record_failure("b1", 1, 2, step="Explode", error="RuntimeError: boom")
        assert lines.next() == (
            "batch b1: done with failures, 1 done, 1 failed, 0 running, 0 queued of 2, epoch 1/1"
        )
        assert lines.next().startswith("batch b1 on 'book' (trace_analyser): done with failures, 1 done")
        assert process.wait(timeout=TIMEOUT) == 1  # a sample failed


def test_ctrl_c_ends_the_watch_with_130_quietly_and_leaves_the_batch_running(
    env: pytest.MonkeyPatch, redis_client: redis.Redis
) -> None:
    ledger_batch(redis_client, PREFIX, "b1", unfinished=2)
    with watching("b1") as (process, lines):
        assert lines.next().startswith("batch b1: running")
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=TIMEOUT) == 130
        assert process.stderr is not None
        assert process.stderr.read() == ""  # no traceback, no "Aborted!"
    assert ledger(redis_client, PREFIX).status("b1").state.value == "running"


def test_in_a_terminal_watch_redraws_its_line_and_ends_with_the_report(
    env: pytest.MonkeyPatch, redis_client: redis.Redis
) -> None:
    batches = ledger_batch(redis_client, PREFIX, "b1", unfinished=1)
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [*CLI, "status", "b1", "--watch", "--interval", "0.1"],
        stdout=follower,
        stderr=follower,
        env={**os.environ, "TERM": "xterm", "COLUMNS": "200"},
    )
    os.close(follower)
    try:
        seen = _read_until(leader, b"running")
        batches.record_failure("b1", 1, 1, step="Explode", error="RuntimeError: boom")
        seen += _read_until(leader, b"Explode")
        assert process.wait(timeout=TIMEOUT) == 1
    finally:
        terminate(process)  # type: ignore[arg-type]
        os.close(leader)
    assert b"\r\x1b[2K" in seen  # the line is redrawn in place (back and erased), not printed again
    shown = re.sub(rb"\x1b\[[0-9;?]*[A-Za-z]", b"", seen)  # colours and cursor moves left out
    assert b"(trace_analyser): failed, 0 done, 1 failed" in shown


def _read_until(fd: int, needle: bytes) -> bytes:
    """What the terminal shows, read until ``needle`` appears (or the timeout)."""
    import select

    seen = b""
    while needle not in seen:
        ready, _, _ = select.select([fd], [], [], TIMEOUT)
        assert ready, f"{needle!r} never shown; the terminal showed {seen!r}"
        seen += os.read(fd, 4096)
    return seen
