"""The Recursive Reflector's sandbox in tests: the issue's escape code, and a machine without the boundary."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from ace_workers.rr import SandboxLimits, boundary

# Short limits, so a test of a kill waits little.
LIMITS = SandboxLimits(timeout_s=1.5, memory_mb=256)

# The one line that removed the in-process import guard on the old sandbox (issue 23).
REMOVE_IMPORT_GUARD = (
    "import builtins, sys\nbuiltins.__import__ = builtins.__import__._real_import; sys.meta_path.pop(0)\n"
)
# The class behind every socket, reached without importing anything (issue 23).
RAW_SOCKET = "[c for c in object.__subclasses__() if c.__name__=='socket'][0]"


def redis_escape_code(port: int, key: str) -> str:
    """Code that writes ``key`` into a Redis on 127.0.0.1:``port`` through the raw socket class."""
    command = f"*3\r\n$3\r\nSET\r\n${len(key)}\r\n{key}\r\n$1\r\n1\r\n".encode()
    return (
        f"s = {RAW_SOCKET}(2, 1)\ns.connect(('127.0.0.1', {port}))\n"
        f"s.sendall({command!r})\nprint(s.recv(100))"
    )


@contextmanager
def boundary_missing(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """As on a machine without bubblewrap: the boundary check runs again and finds no bwrap."""
    monkeypatch.setattr(boundary, "find_bwrap", lambda: None)
    boundary.find_boundary.cache_clear()
    try:
        yield
    finally:
        monkeypatch.undo()
        boundary.find_boundary.cache_clear()


def processes_running(*argv: str) -> list[int]:
    """Pids of this machine's processes whose command line is exactly ``argv``."""
    wanted = "\0".join(argv).encode() + b"\0"
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                if handle.read() == wanted:
                    found.append(int(entry))
        except OSError:
            continue  # ended while we looked
    return found
