"""How long the test suite takes here and now, against another commit measured in the same run.

A shared 2-core machine drifts: the same command on the same commit took 102 to 125 s within
one hour. So this runs the suite for this tree and for ``--base`` (checked out into a
temporary worktree) in turns (the order reversed every other round), ``--rounds`` times each,
and reports each run's wall and CPU seconds, the ratio of the medians and the per-round ratio
(min/median/max), which is what carries from one machine to another.

    python benchmarks/suite_speed.py --base 34331b3 [--rounds 2] [--full]

``--full`` times what ``make test`` runs, else what ``make test-fast`` runs (the drills and
browser tests left out). Both trees run with this checkout's virtualenv; the base tree goes
first on ``PYTHONPATH``, for the test processes and every subprocess they start.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rounds import ratio_spread, round_order, spread_text

ROOT = Path(__file__).resolve().parent.parent
FAST = ["-m", "not drill and not browser"]


def run_suite(tree: Path, full: bool) -> tuple[float, float, str]:
    """One run of the suite in ``tree``: wall and CPU seconds (of the waited processes), pytest's summary."""
    env = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(tree)
    command = [sys.executable, "-m", "pytest", "-n", "4", "--dist", "load", "-q", "-p", "no:cacheprovider"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    done = subprocess.run(
        [*command, *([] if full else FAST)], cwd=tree, env=env, capture_output=True, text=True, check=False
    )
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = done.stdout.strip().splitlines() or ["(no output)"]
    if done.returncode != 0:
        raise SystemExit(f"the suite failed in {tree}:\n{done.stdout[-3000:]}\n{done.stderr[-2000:]}")
    return wall, cpu, lines[-1].strip("= ")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--base", required=True, help="the commit to compare with (any git revision)")
    parser.add_argument("--rounds", type=int, default=2, help="runs of each tree, in turns (default 2)")
    parser.add_argument("--full", action="store_true", help="the whole suite, as make test runs it")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ace-suite-base-") as folder:
        base = Path(folder) / "base"
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(base), args.base], check=True
        )
        walls: dict[str, list[float]] = {"this tree": [], args.base: []}
        try:
            for round_number in range(1, args.rounds + 1):
                for name, tree in round_order((("this tree", ROOT), (args.base, base)), round_number - 1):
                    wall, cpu, summary = run_suite(tree, args.full)
                    walls[name].append(wall)
                    print(
                        f"round {round_number}, {name}: {wall:.1f} s wall, {cpu:.0f} s CPU ({summary})",
                        flush=True,
                    )
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)], check=False)
    here, there = statistics.median(walls["this tree"]), statistics.median(walls[args.base])
    print(f"median wall: this tree {here:.1f} s, {args.base} {there:.1f} s; ratio {here / there:.2f}")
    ratio = ratio_spread(walls["this tree"], walls[args.base])
    print(f"wall this tree / {args.base}, per round: {spread_text(ratio)}")


if __name__ == "__main__":
    main()
