"""Engine overhead: microseconds the pipeline adds per step, with no-op steps.

Runs N samples through 5 no-op synchronous steps with workers=1 and reports
(run time - time of calling the same steps directly in a loop) / (N x 5).
The baseline subtracts what the steps themselves cost, so the figure is the
engine's own work per step: validation-free dispatch, hooks check,
cancellation check, concurrency limit, result bookkeeping. Each of
``--repeats`` rounds times the pipeline and the direct loop in turns (the order
reversed every other round); the overhead is reported as min/median/max.

The reference ACE framework's engine (its ``pipeline`` package, shipped in the
``ace-framework`` wheel on PyPI, which needs Python 3.12 to install but not to
import) is measured the same way. Its package has the same name as ours, so it
runs in a process of its own: ``--engine PATH`` measures the ``pipeline`` package
found at PATH (the wheel itself, or a folder holding ``pipeline/``) instead of
ours, and ``--compare PATH`` runs ours and that one in turns, one process per
round, and prints the ratio reference / ours per round (min/median/max)::

    pip download --no-deps --only-binary=:all: --python-version 3.12 ace-framework -d /tmp/reference
    python benchmarks/engine_overhead.py --compare /tmp/reference/ace_framework-*.whl

A failed sample is one whose result holds an ``error`` (both engines' SampleResult
have it; the reference's has no ``ok``).

    python benchmarks/engine_overhead.py [--samples 10000] [--repeats 5] [--engine PATH | --compare PATH]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rounds import Spread, ratio_spread, round_order, spread_text

TARGET_US_PER_STEP = 30.0
STEPS = 5


def load_engine(path: str | None) -> Any:
    """The ``pipeline`` module to measure: ours, or the one at ``path`` (a wheel or a folder)."""
    if path is not None:
        if not (Path(path) / "pipeline").is_dir() and not Path(path).is_file():
            raise SystemExit(f"--engine {path}: neither a wheel nor a folder holding pipeline/")
        sys.path.insert(0, str(Path(path).resolve()))  # a wheel is a zip: zipimport reads it
    import pipeline

    return pipeline


def make_context_class(engine: Any) -> Any:
    """A context with one domain field, like a real subclass, of ``engine``'s StepContext."""

    @dataclass(frozen=True)
    class BenchContext(engine.StepContext):  # type: ignore[misc,name-defined]
        value: int = 0

    return BenchContext


def make_noop_step(index: int) -> object:
    """A step that returns its context unchanged, as its own class."""

    def __call__(self: object, ctx: Any) -> Any:
        return ctx

    cls = type(f"NoOp{index}", (), {"requires": frozenset(), "provides": frozenset(), "__call__": __call__})
    return cls()


def time_direct(steps: list[object], contexts: list[Any]) -> float:
    """Seconds to call every step on every context in a plain loop (the floor)."""
    start = time.perf_counter()
    for ctx in contexts:
        for step in steps:
            ctx = step(ctx)  # type: ignore[operator]
    return time.perf_counter() - start


def time_pipeline(pipeline: Any, contexts: list[Any]) -> float:
    """Seconds for Pipeline.run over the contexts with workers=1."""
    start = time.perf_counter()
    results = pipeline.run(contexts, workers=1)
    elapsed = time.perf_counter() - start
    failed = [r for r in results if r.error is not None]
    if len(results) != len(contexts) or failed:
        raise SystemExit(f"benchmark run is wrong: {len(results)} results, {len(failed)} failed")
    return elapsed


def measure(engine: Any, samples: int, repeats: int) -> dict[str, list[float]]:
    """Microseconds per step, total and overhead, one of each per round (pipeline and loop in turns)."""
    steps = [make_noop_step(i) for i in range(STEPS)]
    pipeline = engine.Pipeline(steps)
    context_class = make_context_class(engine)
    contexts = [context_class(sample=i, value=i) for i in range(samples)]
    time_pipeline(pipeline, contexts[:1000])  # warm up
    figures: dict[str, list[float]] = {"total_us": [], "overhead_us": []}
    for number in range(repeats):
        seconds = {}
        for side in round_order(("pipeline", "direct"), number):
            if side == "pipeline":
                seconds[side] = time_pipeline(pipeline, contexts)
            else:
                seconds[side] = time_direct(steps, contexts)
        figures["total_us"].append(seconds["pipeline"] / (samples * STEPS) * 1e6)
        figures["overhead_us"].append((seconds["pipeline"] - seconds["direct"]) / (samples * STEPS) * 1e6)
    return figures


def compare(path: str, args: argparse.Namespace) -> None:
    """Ours and the engine at ``path`` in turns, a process per round; the ratio reference / ours."""
    overheads: dict[str, list[float]] = {"ours": [], "reference": []}
    for number in range(args.repeats):
        for side in round_order(("ours", "reference"), number):
            command = [sys.executable, __file__, "--samples", str(args.samples), "--repeats", "1", "--json"]
            if side == "reference":
                command += ["--engine", path]
            done = subprocess.run(command, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                raise SystemExit(f"{side} engine failed (exit {done.returncode}):\n{done.stderr.strip()}")
            overheads[side].append(json.loads(done.stdout.splitlines()[-1])["overhead_us"][0])
    print(f"samples={args.samples} steps={STEPS} workers=1 rounds={args.repeats} (a process per round)")
    for side, values in overheads.items():
        print(f"{side:9} engine overhead per step, us: {Spread.of(values)}")
    ratio = ratio_spread(overheads["reference"], overheads["ours"])
    print(f"reference / ours: {spread_text(ratio)}")


def main() -> None:
    """Measure and print the engine overhead per step."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--samples", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=5, help="rounds, pipeline and direct loop in turns")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--engine", help="measure the pipeline package at this wheel or folder, not ours")
    which.add_argument("--compare", help="ours against the pipeline package at this wheel or folder")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON line")
    args = parser.parse_args()
    if args.samples < 1000 or args.repeats < 1:
        parser.error("--samples must be at least 1000 (the warm-up) and --repeats at least 1")
    if args.compare:
        compare(args.compare, args)
        return
    engine = load_engine(args.engine)
    figures = measure(engine, args.samples, args.repeats)
    if args.json:
        print(json.dumps(figures))
        return
    overhead = Spread.of(figures["overhead_us"])
    print(f"engine: {Path(engine.__file__).parent}")
    print(f"samples={args.samples} steps={STEPS} workers=1 rounds={args.repeats}")
    print(f"total time per step, us:      {Spread.of(figures['total_us'])}")
    print(f"engine overhead per step, us: {overhead} (target <= {TARGET_US_PER_STEP:.0f} us)")
    print("PASS" if overhead.median <= TARGET_US_PER_STEP else "ABOVE TARGET")


if __name__ == "__main__":
    main()
