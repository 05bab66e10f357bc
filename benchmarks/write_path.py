"""Write path: store.apply latency at 100 vs 10,000 skills, and single-writer applies per second.

Two skillbooks are pre-filled with ``RedisSkillbookStore.import_skillbook`` of a
generated Skillbook (100 and 10,000 skills over 20 sections). Each apply is a
small batch like the SkillManager's: one TAG of an existing skill and one ADD
of a new one, with a base version, an idempotency key and a source, exactly
as ApplyStep writes through the store. Latency: ``--applies`` applies per
size, interleaved (100, 10k, 100, 10k, ...) so both see the same machine,
after a warm-up; p50 and p95 are reported and the p50s must be within 1.5x
(every apply adds a skill, so the books end near 430 and 10,330 skills).
Throughput: one thread applying back to back to the 10,000-skill skillbook for
``--seconds``; target at least 500 applies/s.

Also printed, for information (no target): Redis round trips per apply, and
the latency of the same batch through ``StoreBackedSkillbook.apply_update``
(what ApplyStep calls in a worker: the store apply plus the refresh of the
worker's skillbook view to the new version).

Redis: database 14 of the local server over TCP loopback (flushed before and
after; no other database is touched).

    python benchmarks/write_path.py [--applies 300] [--seconds 5] [--step-applies 20]
        [--redis-url redis://127.0.0.1:6379/14]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from typing import Any

import redis
from bench_db import DEFAULT_REDIS_URL, claim_bench_db

from ace_workers.core import Skillbook
from ace_workers.core.updates import UpdateBatch, UpdateOperation
from ace_workers.distributed import RedisSkillbookStore, SnapshotCache
from ace_workers.distributed.store.backed_skillbook import StoreBackedSkillbook

TARGET_RATIO = 1.5
TARGET_APPLIES_PER_S = 500.0
SIZES = (100, 10_000)
SECTIONS = 20
PREFIX = "benchwp"


class CountingConnection(redis.Connection):
    """A redis-py connection that counts what it sends: one count per round trip."""

    sends = 0

    def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        CountingConnection.sends += 1
        super().send_packed_command(command, check_health)  # type: ignore[no-untyped-call]


def generated_skillbook(size: int) -> Skillbook:
    """``size`` skills spread over SECTIONS sections, with realistic text lengths."""
    book = Skillbook()
    for i in range(size):
        book.add_skill(
            f"section_{i % SECTIONS}",
            f"Strategy {i}: when a question mentions pattern {i * 7919 % 100_003}, check the unit "
            "first, restate the constraint, then compute the answer step by step.",
            justification=f"Learned from sample {i}: the answer was wrong without it.",
            evidence=f"trace {i}: final answer differed from the ground truth",
        )
    return book


class Writer:
    """One pre-filled skillbook and the small batches applied to it."""

    def __init__(self, client: redis.Redis, size: int, rng: random.Random) -> None:
        self.size = size
        self.rng = rng
        self.store = RedisSkillbookStore(client, f"wp-{size}", prefix=PREFIX, snapshot_cache=SnapshotCache())
        book = generated_skillbook(size)
        self.ids = [skill.id for skill in book.skills()]
        self.version = self.store.import_skillbook(book)
        self.count = 0

    def batch(self) -> UpdateBatch:
        """One TAG of an existing skill and one ADD of a new skill."""
        self.count += 1
        return UpdateBatch(
            reasoning="benchmark batch",
            operations=[
                UpdateOperation(type="TAG", skill_id=self.rng.choice(self.ids), metadata={"helpful": 1}),
                UpdateOperation(
                    type="ADD",
                    section=f"section_{self.rng.randrange(SECTIONS)}",
                    content=f"Bench strategy {self.count} for size {self.size}: verify the final format.",
                    justification="benchmark",
                ),
            ],
        )

    def apply(self) -> float:
        """Seconds of one store.apply of a fresh small batch."""
        batch = self.batch()
        start = time.perf_counter()
        result = self.store.apply(
            batch,
            base_version=self.version,
            idempotency_key=f"bench:{self.size}:{self.count}",
            source={"bench": "write_path", "n": self.count},
        )
        elapsed = time.perf_counter() - start
        if result.duplicate_delivery or len(result.report.added) != 1 or len(result.report.tagged) != 1:
            raise SystemExit(f"benchmark run is wrong: unexpected apply result {result}")
        self.version = result.version
        return elapsed


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0-100), nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered)) - 1))]


def step_apply_latency(writer: Writer, applies: int) -> tuple[float, int]:
    """Median seconds of StoreBackedSkillbook.apply_update (store apply + view refresh), as ApplyStep.

    Also returns the number of skills the skillbook holds by then (every apply adds one).
    """
    view = StoreBackedSkillbook(writer.store)
    view.refresh()
    times = []
    for _ in range(applies):
        batch = writer.batch()
        start = time.perf_counter()
        view.apply_update(batch)
        times.append(time.perf_counter() - start)
    writer.version = view.version
    return statistics.median(times), writer.size + writer.count


def main() -> None:
    """Measure and print apply latency per skillbook size and single-writer throughput."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--applies", type=int, default=300, help="timed applies per skillbook size")
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--seconds", type=float, default=5.0, help="length of the throughput run")
    parser.add_argument("--step-applies", type=int, default=20, help="applies through the worker view")
    parser.add_argument("--redis-url", default=DEFAULT_REDIS_URL)
    args = parser.parse_args()

    pool = redis.ConnectionPool.from_url(args.redis_url, connection_class=CountingConnection)
    client = redis.Redis(connection_pool=pool)
    claim_bench_db(
        client, args.redis_url
    )  # before the try: a run that could not claim db 14 must not flush it
    try:
        rng = random.Random(7)
        writers = {size: Writer(client, size, rng) for size in SIZES}
        for writer in writers.values():
            for _ in range(args.warmup):
                writer.apply()
        times: dict[int, list[float]] = {size: [] for size in SIZES}
        sends_before = CountingConnection.sends
        for i in range(args.applies):
            for size in SIZES if i % 2 == 0 else reversed(SIZES):
                times[size].append(writers[size].apply())
        round_trips = (CountingConnection.sends - sends_before) / (args.applies * len(SIZES))

        big = writers[SIZES[-1]]
        done = 0
        start = time.perf_counter()
        while (elapsed := time.perf_counter() - start) < args.seconds:
            big.apply()
            done += 1
        throughput = done / elapsed
        step = {size: step_apply_latency(writers[size], args.step_applies) for size in SIZES}
    finally:
        client.flushdb()
        client.close()

    p50 = {size: statistics.median(t) * 1000 for size, t in times.items()}
    p95 = {size: percentile(t, 95) * 1000 for size, t in times.items()}
    small, large = SIZES
    ratio = p50[large] / p50[small]
    print(f"batch: 1 TAG + 1 ADD, {args.applies} applies per size (interleaved), redis={args.redis_url}")
    for size in SIZES:
        print(f"apply latency, {size:>6} skills: p50 {p50[size]:6.2f} ms  p95 {p95[size]:6.2f} ms")
    print(f"redis round trips per apply: {round_trips:.1f}")
    print(
        f"p50 ratio {large} / {small}: {ratio:5.2f}x (target <= {TARGET_RATIO}x); "
        f"p95 ratio {p95[large] / p95[small]:.2f}x"
    )
    print(
        f"single-writer throughput ({large} skills): {throughput:7.1f} applies/s "
        f"(target >= {TARGET_APPLIES_PER_S:.0f}; {done} applies in {elapsed:.1f} s)"
    )
    print(
        "through the worker view (StoreBackedSkillbook.apply_update = apply + refresh, informative): "
        + ", ".join(f"{skills} skills p50 {median * 1000:.1f} ms" for median, skills in step.values())
    )
    passed = ratio <= TARGET_RATIO and throughput >= TARGET_APPLIES_PER_S
    print("PASS" if passed else "ABOVE TARGET")


if __name__ == "__main__":
    main()
