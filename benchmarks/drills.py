"""Failure drills of issue 6, run as the tests run them, with their outcomes printed as a table.

Each drill starts its own redis-server on a free port (never the shared one: drills
restart it) and real ``ace-workers worker`` processes; the scenarios are those of
tests/drills/scenarios.py. Columns: done / failed / dead-lettered of the batch,
duplicate skills, writes applied twice (an idempotency key twice in the change log),
whether the change log's versions run without a gap, and the duration.

    python benchmarks/drills.py [--only restart,full,kill,lost,stuck,llm,cli] [--cli-counts 1000,10000]
                                [--repeat-kills 10]

First a repeated table: each worker-kill drill run ``--repeat-kills`` times (runs,
completed, samples lost, duplicated, seconds).
The CLI drill at 10,000 traces takes about 15 minutes on a 2-CPU machine.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository, for tests.drills

from tests.drills.harness import Outcome
from tests.drills.scenarios import (
    cli_enqueue,
    llm_rate_limited,
    message_lost,
    redis_full,
    redis_restarted,
    worker_killed,
    worker_stops_consuming,
)

DRILLS = ("restart", "full", "kill", "lost", "stuck", "llm", "cli")


def run(only: set[str], cli_counts: tuple[int, ...], root: Path) -> list[Outcome]:
    """Run the chosen drills, each in a folder of its own under ``root``; a drill that raises is a row too."""
    drills: list[tuple[str, str, Callable[[], Outcome | list[Outcome]]]] = [
        (
            "restart",
            "redis restarted while idle",
            lambda: redis_restarted(root / "r-idle", during_batch=False),
        ),
        ("restart", "redis restarted mid-batch", lambda: redis_restarted(root / "r-mid", during_batch=True)),
        (
            "kill",
            "worker killed during Reflect",
            lambda: worker_killed(root / "k-reflect", step="ReflectStep"),
        ),
        ("kill", "worker killed during Apply", lambda: worker_killed(root / "k-apply", step="ApplyStep")),
        ("full", "redis out of memory at start", lambda: redis_full(root / "full")),
        ("lost", "messages lost by the broker", lambda: message_lost(root / "lost")),
        ("stuck", "worker stops consuming", lambda: worker_stops_consuming(root / "stuck")),
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


def repeat_kills(runs: int, root: Path) -> list[tuple[str, list[Outcome]]]:
    """SIGKILL the learn worker mid-Reflect, and the writer mid-Apply, ``runs`` times each."""
    repeated = []
    for step, victim in (("ReflectStep", "learn worker"), ("ApplyStep", "writer")):
        outcomes = []
        for run_number in range(1, runs + 1):
            try:
                outcomes.append(worker_killed(root / f"repeat-{step}-{run_number}", step=step))
            except Exception as exc:  # counted as a run that did not complete
                failed = Outcome(drill=f"{victim} killed", load="-", faults="-")
                failed.notes.append(f"DRILL FAILED: {type(exc).__name__}: {exc}")
                traceback.print_exc()
                outcomes.append(failed)
            print(
                f"  {victim} killed, run {run_number}/{runs}: {outcomes[-1].done}/{outcomes[-1].total}",
                flush=True,
            )
        repeated.append((f"{victim} SIGKILLed mid-{step.removesuffix('Step')}", outcomes))
    return repeated


def print_repeated(repeated: list[tuple[str, list[Outcome]]]) -> None:
    """One row per repeated drill: runs, runs that completed, samples lost and duplicated, seconds."""
    header = ("drill (Redis broker)", "runs", "completed", "lost", "duplicated", "seconds mean / max")
    rows = []
    for name, outcomes in repeated:
        seconds = [o.seconds for o in outcomes if o.total]
        rows.append(
            (
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
    args = parser.parse_args()
    only = {name.strip() for name in args.only.split(",") if name.strip()}
    unknown = only - set(DRILLS)
    if unknown:
        parser.error(f"unknown drill(s) {sorted(unknown)}: use {', '.join(DRILLS)}")
    counts = tuple(int(c) for c in args.cli_counts.split(","))
    with tempfile.TemporaryDirectory(prefix="ace-drills-") as root:
        repeated = repeat_kills(args.repeat_kills, Path(root)) if args.repeat_kills else []
        outcomes = run(only, counts, Path(root))
    if repeated:
        print_repeated(repeated)
    print_table(outcomes)


if __name__ == "__main__":
    main()
