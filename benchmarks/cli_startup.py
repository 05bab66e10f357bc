"""CLI start-up: how long a command takes from a cold process to its answer, beside ``python -c pass``.

Each command runs ``--runs`` times as a fresh process (``python -c "from ace_workers.cli import
main; main()" ...``, as the console script does); the commands take turns within each round, so
a burst of load on the machine falls on all of them alike. Figures: median, min and max seconds.

Commands: ``--help`` and ``--version``; the state commands ``status``, ``skillbook show``,
``skillbook list``, ``tenant list``, ``key list`` and ``dead-letters list`` against a private
redis-server this script starts (a skillbook of 20 skills and a batch on it, no worker); and
``learn --model nope``, refused before anything runs.

Targets: ``--help``/``--version`` <= 0.5 s; each state command <= 1.0 s; the refusal <= 2 s.

``--pythonpath`` runs the commands on another source tree (e.g. the main branch's), to compare.

    python benchmarks/cli_startup.py [--runs 5] [--pythonpath /path/to/tree]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import redis

from ace_workers.core import UpdateBatch, UpdateOperation
from ace_workers.distributed.ops.embedded_redis import EmbeddedRedis
from ace_workers.distributed.settings import WorkerSettings
from ace_workers.distributed.store.batches import BatchStore
from ace_workers.distributed.store.store import RedisSkillbookStore
from ace_workers.operations import open_fleet

PREFIX = "clibench"
CLI = "from ace_workers.cli import main; main()"
TARGETS = {"startup": 0.5, "state": 1.0, "refusal": 2.0}


def commands(traces: Path) -> dict[str, tuple[str, list[str]]]:
    """Each command measured: its kind (which target applies) and its arguments."""
    return {
        "python -c pass": ("baseline", []),
        "--help": ("startup", ["--help"]),
        "--version": ("startup", ["--version"]),
        "status": ("state", ["status", "b1"]),
        "skillbook show": ("state", ["skillbook", "show", "book"]),
        "skillbook list": ("state", ["skillbook", "list"]),
        "tenant list": ("state", ["tenant", "list"]),
        "key list": ("state", ["key", "list"]),
        "dead-letters list": ("state", ["dead-letters", "list"]),
        "learn --model nope": ("refusal", ["learn", str(traces), "--model", "nope"]),
    }


def seed(redis_url: str) -> None:
    """A skillbook of 20 skills and a running batch on it (no worker serves it)."""
    settings = WorkerSettings.from_env({"ACE_QUEUE_PREFIX": PREFIX})
    with open_fleet(settings, redis_url):  # stamps the schema of a new Redis, as a first command does
        pass
    client = redis.Redis.from_url(redis_url)
    operations = [UpdateOperation(type="ADD", section="math", content=f"Check rule {i}.") for i in range(20)]
    RedisSkillbookStore(client, "book", prefix=PREFIX).apply(UpdateBatch(reasoning="", operations=operations))
    BatchStore(client, prefix=PREFIX, ttl_seconds=3600).create(
        "b1", skillbook="book", recipe="trace_analyser", per_epoch=1, epochs=1, skills_at_start=20
    )
    client.close()


def run_once(args: list[str], env: dict[str, str], baseline: bool, cwd: str) -> tuple[float, int]:
    """Seconds of one cold process, and its exit code.

    Run in ``cwd``, a folder of no source: ``python -c`` puts the working directory first on
    sys.path, which would shadow ``--pythonpath`` when run from a source tree.
    """
    argv = [sys.executable, "-c", "pass"] if baseline else [sys.executable, "-c", CLI, *args]
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    return time.perf_counter() - started, done.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="cold processes per command")
    parser.add_argument("--pythonpath", default=None, help="source tree the commands run on")
    options = parser.parse_args()
    with EmbeddedRedis() as server, tempfile.TemporaryDirectory() as folder:
        seed(server.redis_url)
        traces = Path(folder) / "traces.jsonl"
        traces.write_text('{"question": "q"}\n')
        env = {name: value for name, value in os.environ.items() if not name.startswith("ACE_")}
        env |= {"ACE_REDIS_URL": server.redis_url, "ACE_QUEUE_PREFIX": PREFIX}
        # The source tree asked for, else the one this script runs on.
        env["PYTHONPATH"] = options.pythonpath or str(Path(__file__).resolve().parents[1])
        table = commands(traces)
        times: dict[str, list[float]] = {name: [] for name in table}
        codes: dict[str, set[int]] = {name: set() for name in table}
        for round_number in range(options.runs):
            names = list(table)
            names = names if round_number % 2 == 0 else names[::-1]  # alternate the order between rounds
            for name in names:
                kind, args = table[name]
                seconds, code = run_once(args, env, kind == "baseline", folder)
                times[name].append(seconds)
                codes[name].add(code)
    print(f"load average: {os.getloadavg()[0]:.2f} (1 min, at the end); {options.runs} runs per command")
    print(f"{'command':22} {'median':>7} {'min':>7} {'max':>7} {'target':>7}  exit  ok")
    for name, (kind, _args) in table.items():
        values = times[name]
        target = TARGETS.get(kind)
        median = statistics.median(values)
        verdict = "" if target is None else ("yes" if median <= target else "NO")
        shown_target = "" if target is None else f"{target:.1f}"
        exits = ",".join(str(code) for code in sorted(codes[name]))
        figures = f"{median:7.3f} {min(values):7.3f} {max(values):7.3f}"
        print(f"{name:22} {figures} {shown_target:>7}  {exits:>4}  {verdict}")


if __name__ == "__main__":
    main()
