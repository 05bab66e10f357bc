"""Failure drills of issue 6, run as the tests run them, with their outcomes printed as a table.

Each drill starts its own redis-server on a free port (never the shared one: drills
restart it) and real ``ace-workers worker`` processes; the scenarios are those of
tests/support/drills/scenarios.py. Columns: done / failed / dead-lettered of the batch,
duplicate skills, writes applied twice (an idempotency key twice in the change log),
whether the change log's versions run without a gap, and the duration.

    python benchmarks/drills.py [--only restart,full,kill,lost,stuck,llm,cli] [--cli-counts 1000,10000]
                                [--repeat-kills 10] [--brokers redis,rabbitmq]

First a repeated table: each worker-kill drill run ``--repeat-kills`` times on each
broker (runs, completed, samples lost, duplicated, seconds). The restart, kill and
lost drills also run once per broker in the main table. A RabbitMQ drill runs on a
vhost of its own on the local RabbitMQ (127.0.0.1:5672, user guest), deleted after.
The CLI drill at 10,000 traces takes about 15 minutes on a 2-CPU machine.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository, for tests.drills

from tests.support.drills.harness import BROKERS, Outcome
from tests.support.drills.scenarios import (
    cli_enqueue,
    llm_rate_limited,
    message_lost,
    redis_full,
    redis_restarted,
    worker_group_terminated,
    worker_killed,
    worker_stops_consuming,
)

DRILLS = ("restart", "full", "kill", "term", "lost", "stuck", "llm", "cli")


def run(only: set[str], cli_counts: tuple[int, ...], brokers: tuple[str, ...], root: Path) -> list[Outcome]:
    """Run the chosen drills, each in a folder of its own under ``root``; a drill that raises is a row too."""
    drills: list[tuple[str, str, Callable[[], Outcome | list[Outcome]]]] = [
        (
            "restart",
            "redis restarted while idle",
            lambda: redis_restarted(root / "r-idle", during_batch=False),
        ),
    ]
    for broker in brokers:
        suffix = "" if broker == "redis" else f" ({broker})"
        drills += [
            (
                "restart",
                f"redis restarted mid-batch{suffix}",
                partial(redis_restarted, root / f"r-mid-{broker}", during_batch=True, broker=broker),
            ),
            (
                "kill",
                f"worker killed during Reflect{suffix}",
                partial(worker_killed, root / f"k-reflect-{broker}", step="ReflectStep", broker=broker),
            ),
            (
                "kill",
                f"worker killed during Apply{suffix}",
                partial(worker_killed, root / f"k-apply-{broker}", step="ApplyStep", broker=broker),
            ),
            (
                "lost",
                f"messages lost by the broker{suffix}",
                partial(message_lost, root / f"lost-{broker}", broker=broker),
            ),
        ]
    drills += [
        ("full", "redis out of memory at start", lambda: redis_full(root / "full")),
        ("stuck", "worker stops consuming", lambda: worker_stops_consuming(root / "stuck")),
        ("term", "worker's process group sent SIGTERM", lambda: worker_group_terminated(root / "term")),
        ("llm", "LLM rate-limited 50%", lambda: llm_rate_limited(root / "llm-50", rate=0.5, max_retries=12)),
        ("llm", "LLM rate-limited 100%", lambda: llm_rate_limited(root / "llm-100", rate=1.0, max_retries=2)),
        ("cli", "traces through the CLI", lambda: cli_enqueue(root / "cli", counts=cli_counts)),
    ]
    outcomes: list[Outcome] = []
    for group, name, drill in drills:
        if group not in only:
            continue
        started = time.monotonic()
        try:
            result = drill()
        except Exception as exc:  # the table reports it; the other drills still run
            failed = Outcome(drill=name, load="-", faults="-", seconds=time.monotonic() - started)
            failed.notes.append(f"DRILL FAILED: {type(exc).__name__}: {exc}")
            traceback.print_exc()  # where it failed, on stderr: the table keeps one line
            result = failed
        outcomes.extend(result if isinstance(result, list) else [result])
    return outcomes


def print_table(outcomes: list[Outcome]) -> None:
    """One row per drill, then each drill's notes."""
    header = ("drill", "faults injected", "done/failed/dead", "dup", "twice", "log ok", "seconds")
    rows = [
        (
            o.drill,
            o.faults,
            f"{o.done}/{o.failed}/{o.dead_lettered} of {o.total}",
            str(o.duplicate_skills),
            str(o.steps_applied_twice),
            "yes" if o.versions_contiguous else "NO",
            f"{o.seconds:.1f}",
        )
        for o in outcomes
    ]
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]
    for row in (header, tuple("-" * w for w in widths), *rows):
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))
    print()
    for o in outcomes:
        notes = [n for n in o.notes if not n.startswith("peak_kib=")]
        print(f"{o.drill} [{o.load}]: {'; '.join(notes)}")


def repeat_kills(runs: int, brokers: tuple[str, ...], root: Path) -> list[tuple[str, str, list[Outcome]]]:
    """On each broker, SIGKILL the learn worker mid-Reflect, and the writer mid-Apply, ``runs`` times each."""
    repeated = []
    kills = (("ReflectStep", "learn worker"), ("ApplyStep", "writer"))
    for broker, (step, victim) in ((broker, kill) for broker in brokers for kill in kills):
        outcomes = []
        for run_number in range(1, runs + 1):
            try:
                folder = root / f"repeat-{broker}-{step}-{run_number}"
                outcomes.append(worker_killed(folder, step=step, broker=broker))
            except Exception as exc:  # counted as a run that did not complete
                failed = Outcome(drill=f"{victim} killed", load="-", faults="-")
                failed.notes.append(f"DRILL FAILED: {type(exc).__name__}: {exc}")
                traceback.print_exc()
                outcomes.append(failed)
            print(
                f"  {broker}: {victim} killed, run {run_number}/{runs}: "
                f"{outcomes[-1].done}/{outcomes[-1].total}",
                flush=True,
            )
        repeated.append((broker, f"{victim} SIGKILLed mid-{step.removesuffix('Step')}", outcomes))
    return repeated


def print_repeated(repeated: list[tuple[str, str, list[Outcome]]]) -> None:
    """One row per broker and repeated drill: runs, completed, samples lost and duplicated, seconds."""
    header = ("broker", "drill", "runs", "completed", "lost", "duplicated", "seconds mean / max")
    rows = []
    for broker, name, outcomes in repeated:
        seconds = [o.seconds for o in outcomes if o.total]
        rows.append(
            (
                broker,
                name,
                str(len(outcomes)),
                str(sum(1 for o in outcomes if o.total and o.done == o.total and o.failed == 0)),
                str(sum(o.total - o.done - o.failed for o in outcomes)),
                str(sum(o.duplicate_skills + o.steps_applied_twice for o in outcomes)),
                f"{sum(seconds) / max(1, len(seconds)):.1f} / {max(seconds, default=0.0):.1f}",
            )
        )
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]
    for row in (header, tuple("-" * w for w in widths), *rows):
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))
    print()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--only", default=",".join(DRILLS), help=f"comma-separated subset of {', '.join(DRILLS)}"
    )
    parser.add_argument("--cli-counts", default="1000,10000", help="trace counts of the CLI drill")
    parser.add_argument(
        "--repeat-kills",
        type=int,
        default=10,
        help="runs of each worker-kill drill for the repeated table (0: none)",
    )
    parser.add_argument(
        "--brokers", default=",".join(BROKERS), help=f"comma-separated subset of {', '.join(BROKERS)}"
    )
    args = parser.parse_args()
    only = {name.strip() for name in args.only.split(",") if name.strip()}
    unknown = only - set(DRILLS)
    if unknown:
        parser.error(f"unknown drill(s) {sorted(unknown)}: use {', '.join(DRILLS)}")
    brokers = tuple(name.strip() for name in args.brokers.split(",") if name.strip())
    if unknown_brokers := set(brokers) - set(BROKERS):
        parser.error(f"unknown broker(s) {sorted(unknown_brokers)}: use {', '.join(BROKERS)}")
    counts = tuple(int(c) for c in args.cli_counts.split(","))
    with tempfile.TemporaryDirectory(prefix="ace-drills-") as root:
        repeated = repeat_kills(args.repeat_kills, brokers, Path(root)) if args.repeat_kills else []
        outcomes = run(only, counts, brokers, Path(root))
    if repeated:
        print_repeated(repeated)
    print_table(outcomes)


if __name__ == "__main__":
    main()
