"""Engine overhead: microseconds the pipeline adds per step, with no-op steps.

Runs N samples through 5 no-op synchronous steps with workers=1 and reports
(run time - time of calling the same steps directly in a loop) / (N x 5).
The baseline subtracts what the steps themselves cost, so the figure is the
engine's own work per step: validation-free dispatch, hooks check,
cancellation check, concurrency limit, result bookkeeping.

    python benchmarks/engine_overhead.py [--samples 10000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import dataclass

from pipeline import Pipeline, StepContext

TARGET_US_PER_STEP = 30.0
STEPS = 5


@dataclass(frozen=True)
class BenchContext(StepContext):
    """A context with one domain field, like a real subclass."""

    value: int = 0


def make_noop_step(index: int) -> object:
    """A step that returns its context unchanged, as its own class."""

    def __call__(self: object, ctx: BenchContext) -> BenchContext:
        return ctx

    cls = type(f"NoOp{index}", (), {"requires": frozenset(), "provides": frozenset(), "__call__": __call__})
    return cls()


def time_direct(steps: list[object], contexts: list[BenchContext]) -> float:
    """Seconds to call every step on every context in a plain loop (the floor)."""
    start = time.perf_counter()
    for ctx in contexts:
        for step in steps:
            ctx = step(ctx)  # type: ignore[operator]
    return time.perf_counter() - start


def time_pipeline(pipeline: Pipeline[BenchContext], contexts: list[BenchContext]) -> float:
    """Seconds for Pipeline.run over the contexts with workers=1."""
    start = time.perf_counter()
    results = pipeline.run(contexts, workers=1)
    elapsed = time.perf_counter() - start
    failed = [r for r in results if not r.ok]
    if len(results) != len(contexts) or failed:
        raise SystemExit(f"benchmark run is wrong: {len(results)} results, {len(failed)} failed")
    return elapsed


def main() -> None:
    """Measure and print the engine overhead per step."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--samples", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=5, help="take the median of this many runs")
    args = parser.parse_args()

    steps = [make_noop_step(i) for i in range(STEPS)]
    pipeline: Pipeline[BenchContext] = Pipeline(steps)
    contexts = [BenchContext(sample=i, value=i) for i in range(args.samples)]
    time_pipeline(pipeline, contexts[:1000])  # warm up

    overheads, totals = [], []
    for _ in range(args.repeats):
        run = time_pipeline(pipeline, contexts)
        floor = time_direct(steps, contexts)
        totals.append(run / (args.samples * STEPS) * 1e6)
        overheads.append((run - floor) / (args.samples * STEPS) * 1e6)
    overhead = statistics.median(overheads)
    print(f"samples={args.samples} steps={STEPS} workers=1 repeats={args.repeats}")
    print(f"total time per step:     {statistics.median(totals):6.2f} us")
    print(f"engine overhead per step: {overhead:6.2f} us (target <= {TARGET_US_PER_STEP:.0f} us)")
    print("PASS" if overhead <= TARGET_US_PER_STEP else "ABOVE TARGET")


if __name__ == "__main__":
    main()
