"""Other processes of a benchmark: the ``ace-workers worker`` processes it starts, and their CPU time."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import ace_workers
from ace_workers.distributed.settings import WorkerSettings, env_name

__all__ = ["cpu_seconds", "cpu_seconds_of", "stop_process", "worker_process"]

BENCH_DIR = Path(__file__).resolve().parent
# The tree this process's ace_workers comes from (a worktree's, with PYTHONPATH at it): the workers
# run that code too, so they and the producer a benchmark drives them with never differ.
CODE_ROOT = Path(ace_workers.__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent


@contextmanager
def worker_process(
    settings: WorkerSettings, queues: str, concurrency: int, name: str, *, fields: Sequence[str] = ()
) -> Iterator[subprocess.Popen[bytes]]:
    """An ``ace-workers worker`` process on ``queues`` (roles, e.g. ``execute,learn``) with ``concurrency``
    threads, named ``name``; stopped on leaving. Not waited for: ping it (its start may take minutes).

    It reads the Redis URL, queue prefix and simulated latency of ``settings``, and each of its
    ``fields`` named (as ACE_<FIELD>); other settings from this process's environment. It imports
    the same ace_workers as this process (its PYTHONPATH starts at CODE_ROOT).
    """
    env = {
        **os.environ,
        "ACE_REDIS_URL": settings.redis_url or "",
        "ACE_QUEUE_PREFIX": settings.queue_prefix,
        "ACE_SIM_LATENCY_SECONDS": str(settings.sim_latency_seconds),
        **{env_name(field): str(getattr(settings, field)) for field in fields},
        "PYTHONPATH": os.pathsep.join(
            filter(None, [str(CODE_ROOT), str(BENCH_DIR), os.environ.get("PYTHONPATH")])
        ),
    }
    command = [
        str(VENV_BIN / "ace-workers"),
        "worker",
        f"--queues={queues}",
        f"--concurrency={concurrency}",
        "--pool=threads",
        "--loglevel=WARNING",
        f"--hostname={name}",
    ]
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL)
    try:
        yield process
    finally:
        stop_process(process)


def stop_process(process: subprocess.Popen[bytes]) -> None:
    """End a worker process (a warm shutdown: it finishes the task in hand); a no-op once it ended."""
    process.terminate()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far (all its threads), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_seconds_of(pids: Mapping[str, int]) -> dict[str, float]:
    """cpu_seconds of each named process."""
    return {name: cpu_seconds(pid) for name, pid in pids.items()}
