"""Child processes of the tests: real ``ace-workers worker`` processes, and stopping what was started."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterable
from contextlib import ExitStack
from pathlib import Path

from ace_workers.distributed.service import Service

from .waiting import wait_for

REPO = Path(__file__).resolve().parents[2]
# The CLI as a worker process runs it: this interpreter, whatever is on PATH.
CLI = "from ace_workers.cli import main; main()"


def start_worker(
    env: dict[str, str],
    log: Path,
    *,
    queues: str,
    concurrency: int = 1,
    pool: str | None = None,
    loglevel: str | None = None,
    hostname: str | None = None,
    extra: tuple[str, ...] = (),
    errors: Path | None = None,
    program: tuple[str, ...] = (sys.executable, "-c", CLI),
    cwd: Path = REPO,
) -> subprocess.Popen[bytes]:
    """A real ``ace-workers worker`` process in a session of its own (stop it with :func:`stop`).

    Its output is appended to ``log``; its stderr to ``errors`` when given, else to ``log`` too.
    ``pool``, ``loglevel`` and ``hostname`` are left to the CLI's defaults when None. ``program``
    is the CLI to run (default: this interpreter's), in ``cwd``.
    """
    command = [*program, "worker", f"--queues={queues}", f"--concurrency={concurrency}"]
    command += [f"--pool={pool}"] if pool else []
    command += [f"--loglevel={loglevel}"] if loglevel else []
    command += [f"--hostname={hostname}"] if hostname else []
    command += extra
    with ExitStack() as files:
        out = files.enter_context(log.open("ab"))
        err: int | object = files.enter_context(errors.open("ab")) if errors else subprocess.STDOUT
        return subprocess.Popen(command, env=env, cwd=cwd, stdout=out, stderr=err, start_new_session=True)


def start_cli(env: dict[str, str], log: Path, *args: str) -> subprocess.Popen[bytes]:
    """``ace-workers ARGS`` exactly as given, in a session of its own, its output appended to ``log``."""
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-c", CLI, *args],
            env=env,
            cwd=REPO,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def stop(*processes: subprocess.Popen[bytes], sig: int = signal.SIGTERM) -> None:
    """Signal process groups started with start_new_session; SIGKILL any still there after 30 s.

    Every group is signalled before any is waited for, so several workers stop together.
    """
    signalled = []
    for process in processes:
        try:
            os.killpg(process.pid, sig)
            signalled.append(process)
        except ProcessLookupError:
            continue
    for process in signalled:
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)


def terminate(process: subprocess.Popen[bytes], timeout: float = 10) -> None:
    """SIGTERM a child (not a session leader); SIGKILL it if it is still there after ``timeout`` s."""
    process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def wait_until_served(service: Service, roles: Iterable[str], timeout: float = 60) -> None:
    """Wait until some worker consumes the queue of each of ``roles`` (execute, learn, write).

    A worker process takes seconds to start, and ``BatchHandle.wait`` refuses at once
    when a queue its batch needs has no worker.
    """
    queues = [service.runtime.queue(role) for role in roles]
    wait_for(
        lambda: set(queues) <= service.dispatcher.queue_consumers(queues, 1.0).keys(),
        timeout,
        f"a worker on {', '.join(queues)}",
        every=0.1,
    )
