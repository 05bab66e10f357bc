"""The CLI with an embedded Redis in a child process, and the redis-server processes it starts.

Processes are read from ``/proc`` (Linux): a redis-server is found as a child of the command,
and counted gone once it has exited (a zombie waiting for its reaper has exited).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from tests.support.processes import CLI
from tests.support.waiting import wait_for

__all__ = ["cli_env", "is_gone", "redis_server_of", "socket_folder_of", "start_cli", "wait_for_line"]


def cli_env(folder: Path | None) -> dict[str, str]:
    """This environment (``clean_env`` took the ACE_* settings out) with the embedded Redis in ``folder``."""
    env = dict(os.environ)
    if folder is not None:
        env["ACE_EMBEDDED_REDIS_DIR"] = str(folder)
    return env


def start_cli(
    args: list[str], env: dict[str, str], log: Path, preexec_fn: Callable[[], None] | None = None
) -> subprocess.Popen[bytes]:
    """``ace-workers ARGS`` as a child process of this interpreter; stdout and stderr go to ``log``."""
    with log.open("wb") as out:
        return subprocess.Popen(
            [sys.executable, "-c", CLI, *args],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            preexec_fn=preexec_fn,
        )


def wait_for_line(process: subprocess.Popen[bytes], log: Path, text: str, timeout: float = 60) -> None:
    """Wait until ``log`` holds ``text``; fails at once, with the log, if the process exits first."""

    def said() -> bool:
        if text in log.read_text(errors="replace"):
            return True
        assert process.poll() is None, (
            f"exited with {process.returncode} before saying {text!r}:\n{log.read_text()}"
        )
        return False

    wait_for(said, timeout, repr(text), every=0.1, detail=lambda: log.read_text(errors="replace")[-2000:])


def redis_server_of(pid: int) -> int:
    """The pid of the redis-server child of process ``pid`` (waits for it to be started)."""

    def child() -> int | None:
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                stat = _stat(int(entry.name))
                if stat is not None and stat[0] == "redis-server" and stat[2] == pid:
                    return int(entry.name)
        return None

    found = wait_for(child, 30, f"the redis-server of process {pid}", every=0.1)
    assert found is not None  # wait_for returns only a truthy answer
    return found


def socket_folder_of(server_pid: int) -> Path:
    """The private folder of a running embedded redis-server's unix socket (from its command line)."""
    cmdline = Path(f"/proc/{server_pid}/cmdline").read_bytes().decode()
    socket = cmdline.split("unixsocket:", 1)[1].split("\0", 1)[0].strip()
    return Path(socket).parent


def is_gone(pid: int) -> bool:
    """True once process ``pid`` has exited."""
    stat = _stat(pid)
    return stat is None or stat[1] in ("Z", "X")


def _stat(pid: int) -> tuple[str, str, int] | None:
    """``(name, state, parent pid)`` of a process, None if there is none."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    # The name is in parentheses and may hold spaces: the fields after it follow the last ")".
    name = text[text.index("(") + 1 : text.rindex(")")]
    state, parent = text[text.rindex(")") + 2 :].split()[:2]
    return name, state, int(parent)
