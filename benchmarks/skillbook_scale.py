"""Learning cost against skillbook size: samples/s, fresh skillbook vs 10,000 and 100,000 skills.

For each size the skillbook is first imported with that many synthetic skills
(varied words over 40 sections, as a long-lived skillbook looks), then the same
worker layout as benchmarks/learning_throughput.py learns into it: one
``ace-workers worker --queues execute,learn --concurrency 16`` process and the
single writer, the simulated LLM sleeping ``--latency`` (200 ms) per call. A
warm-up batch loads the skillbook into the workers; the timed batch follows.

Also measured, in this process, on the store's cached snapshot of each size:
the agent prompt build (``as_prompt`` with the default budget and a task as the
query: the median of ``--prompt-calls`` calls), and the learn worker's
resident memory at the end of each level (its VmRSS; the difference to the
fresh level is what the skillbook costs the worker).

Targets: >= 0.8x the fresh rate at 10,000 skills, >= 0.6x at 100,000; prompt
build <= 5 ms at 100,000.

Provenance: each synthetic skill carries ``--occurrences`` (5, the default of
ACE_PROVENANCE_KEEP) occurrences as learning leaves them: its ADD and TAGs,
each with a batch id, sample, trace id, recipe, key insight, actor and time.
``--occurrences 0`` imports skills with none, as before provenance existed.

Redis: database 14 of the local server (flushed before and after).

    python benchmarks/skillbook_scale.py [--sizes 0,10000,100000] [--per-slot 10] [--slots 16]
        [--latency 0.2] [--occurrences 5] [--redis-url redis://127.0.0.1:6379/14]
"""

from __future__ import annotations

import argparse
import logging
import os
import random
import statistics
import time
import uuid
from pathlib import Path
from typing import Any

from bench_db import DEFAULT_REDIS_URL, bench_redis
from learning_throughput import workers_for

from ace_workers.core import DEFAULT_PROMPT_BUDGET, Skillbook
from ace_workers.core.skill_provenance import DEFAULT_KEEP, INSIGHT_CHARS
from ace_workers.distributed.service import Service, build_service
from ace_workers.distributed.settings import WorkerSettings
from ace_workers.sim import failure_traces

TARGETS = {10_000: 0.8, 100_000: 0.6}
PROMPT_TARGET_MS = 5.0
PROMPT_TARGET_SIZE = 100_000
SECTIONS = 40
VOCABULARY = 5_000  # distinct words the synthetic skills draw from
WARM_UP_SAMPLES = 16


def synthetic_skillbook(size: int, seed: int = 7, occurrences: int = DEFAULT_KEEP) -> Skillbook:
    """``size`` skills of 12-20 words each from a fixed vocabulary, over SECTIONS sections.

    Each carries ``occurrences`` occurrences (an ADD, then TAGs) as a fleet records them.
    """
    rng = random.Random(seed)
    words = [f"w{index}{chr(97 + index % 26)}" for index in range(VOCABULARY)]
    batches = [uuid.UUID(int=rng.getrandbits(128)).hex for _ in range(50)]
    book = Skillbook()
    for index in range(size):
        text = " ".join(rng.choices(words, k=rng.randint(12, 20)))
        skill = book.add_skill(f"section_{index % SECTIONS}", f"When {text}, check it first.")
        if index % 3 == 0:
            book.tag_skill(skill.id, "helpful", rng.randint(1, 5))
    data = book.to_dict()
    for skill_data in data["skills"].values():
        history = [_occurrence(rng, words, batches, "ADD" if n == 0 else "TAG") for n in range(occurrences)]
        skill_data["occurrences"] = history
        skill_data["occurrence_totals"] = {"ADD": 1, "TAG": occurrences - 1} if occurrences else {}
    return Skillbook.from_dict(data)


def _occurrence(rng: random.Random, words: list[str], batches: list[str], kind: str) -> dict[str, Any]:
    """One occurrence as a fleet worker records it (steps/provenance_source.py), with a full insight."""
    insight = " ".join(rng.choices(words, k=40))[:INSIGHT_CHARS]
    sample = rng.randint(1, 5000)
    return {
        "actor": "skill_manager" if kind == "ADD" else "reflector",
        "epoch": 1,
        "step_index": sample - 1,
        "global_sample_index": sample - 1,
        "batch_id": rng.choice(batches),
        "sample_index": sample,
        "recipe": "trace_analyser",
        "trace_id": f"trace-{rng.getrandbits(48):012x}",
        "insight": insight,
        "operation_type": kind,
        "time": f"2026-11-{rng.randint(1, 25):02d}T{rng.randint(0, 23):02d}:00:00.000000+00:00",
    }


def resident_kib(pid: int) -> int:
    """A process's resident set (VmRSS) in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for process {pid}")


def prompt_build_ms(service: Service, skillbook: str, calls: int) -> float:
    """Median milliseconds of the agent's prompt table over ``calls`` tasks, on the cached snapshot."""
    _, view = service.runtime.store(skillbook).cached_snapshot()
    queries = [trace["question"] for trace in failure_traces(calls, seed=3)]
    view.as_prompt(DEFAULT_PROMPT_BUDGET, queries[0])  # the first call may build what later ones reuse
    timings = []
    for query in queries:
        started = time.perf_counter()
        view.as_prompt(DEFAULT_PROMPT_BUDGET, query)
        timings.append((time.perf_counter() - started) * 1000)
    return statistics.median(timings)


def run_level(service: Service, size: int, args: argparse.Namespace) -> dict[str, float]:
    """Import ``size`` skills into a new skillbook, learn into it with fresh workers; the figures."""
    name = f"scale-{size}"
    if size:
        started = time.perf_counter()
        service.runtime.store(name).import_skillbook(synthetic_skillbook(size, occurrences=args.occurrences))
        print(f"  {size:,} skills imported in {time.perf_counter() - started:.1f} s", flush=True)
    samples = args.per_slot * args.slots
    with workers_for(service, "processes", args.slots, bare=False) as processes:
        warm_up = service.producer.enqueue_traces(failure_traces(WARM_UP_SAMPLES, seed=5), name)
        warm_up.wait(timeout=args.timeout)
        started = time.perf_counter()
        handle = service.producer.enqueue_traces(failure_traces(samples, seed=9), name)
        status = handle.wait(timeout=args.timeout)
        elapsed = time.perf_counter() - started
        rss = resident_kib(processes["learn"].pid)
    if (status.done, status.failed) != (samples, 0):
        raise SystemExit(f"{size:,} skills: {status.done} done, {status.failed} failed of {samples}")
    figures = {"rate": samples / elapsed, "seconds": elapsed, "rss_mib": rss / 1024}
    figures["prompt_ms"] = prompt_build_ms(service, name, args.prompt_calls)
    print(f"  {size:,} skills: {figures['rate']:.2f} samples/s", flush=True)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="0,10000,100000", help="comma-separated skillbook sizes")
    parser.add_argument("--slots", type=int, default=16, help="learn threads of the learn worker")
    parser.add_argument("--per-slot", type=int, default=10, help="timed samples per learn thread")
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per simulated LLM call")
    parser.add_argument("--prompt-calls", type=int, default=50)
    parser.add_argument(
        "--occurrences", type=int, default=DEFAULT_KEEP, help="occurrences each synthetic skill carries"
    )
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--redis-url", default=DEFAULT_REDIS_URL)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    sizes = [int(size) for size in args.sizes.split(",")]
    if sizes[0] != 0:
        parser.error("--sizes must start with 0: the fresh skillbook is what the others compare with")
    rows = {}
    limit = max(sizes) + 10_000  # room to learn into the largest skillbook
    os.environ["ACE_MAX_SKILLBOOK_SKILLS"] = str(limit)  # the worker processes inherit it
    with bench_redis(args.redis_url) as url:
        settings = WorkerSettings(
            redis_url=url,
            queue_prefix="benchscale",
            sim_latency_seconds=args.latency,
            max_skillbook_skills=limit,
        )
        service = build_service(settings, redis_url=url)
        try:
            for size in sizes:
                rows[size] = run_level(service, size, args)
        finally:
            service.close()
    report(rows, args)


def report(rows: dict[int, dict[str, float]], args: argparse.Namespace) -> None:
    """The table, with each target and whether it is met."""
    fresh = rows[0]
    print(
        f"simulated LLM {args.latency * 1000:.0f} ms/call, {args.slots} learn threads + 1 writer, "
        f"{args.per_slot * args.slots} timed samples per size, {args.occurrences} occurrences per skill"
    )
    columns = ("skills", "samples/s", "vs fresh", "target", "prompt ms", "worker MiB")
    print(" ".join(f"{name:>{width}}" for name, width in zip(columns, (8, 10, 9, 7, 10, 11), strict=True)))
    verdicts = []
    for size, row in rows.items():
        ratio = row["rate"] / fresh["rate"]
        target = TARGETS.get(size)
        if target is not None:
            verdicts.append(ratio >= target)
        shown = f">={target:.1f}x" if target is not None else "-"
        print(
            f"{size:>8,} {row['rate']:>10.2f} {ratio:>8.2f}x {shown:>7} {row['prompt_ms']:>10.2f} "
            f"{row['rss_mib']:>11.1f}"
        )
    if PROMPT_TARGET_SIZE in rows:
        prompt_ms = rows[PROMPT_TARGET_SIZE]["prompt_ms"]
        verdicts.append(prompt_ms <= PROMPT_TARGET_MS)
        print(
            f"prompt build at {PROMPT_TARGET_SIZE:,} skills: {prompt_ms:.2f} ms "
            f"(target <= {PROMPT_TARGET_MS} ms)"
        )
    for size, row in rows.items():
        if size:
            extra = row["rss_mib"] - fresh["rss_mib"]
            print(f"learn worker memory for a skillbook of {size:,} skills: +{extra:.0f} MiB over fresh")
    print("PASS" if verdicts and all(verdicts) else "BELOW TARGET")


if __name__ == "__main__":
    main()
