"""Write partitions: aggregate skillbook applies/s over 8 skillbooks with 1 vs 2 write partitions.

The write queue is made the bottleneck: the simulated LLM answers at once
(``--latency 0``) and one learn worker process runs ``--learn-threads`` threads,
so samples wait for their writer. Each sample of TraceAnalyser's recipe makes two
writes (TagStep and ApplyStep, each one store transaction). For each partition
count N the fleet is: the learn worker, and N ``ace-workers worker --queues
write.K --concurrency 1`` processes (N = 1: the one ``write`` queue). Eight
skillbooks learn ``--per-book`` traces each, sent together; the time runs from
the first send to the last sample done.

N = 1 and N = 2 run ``--rounds`` times in turns (the order reversed every other round, new
skillbooks each round). Reported: write steps per second for N = 1 and N = 2, their ratio per
round (min/median/max), and each
process's CPU use (learn worker, writers, Redis, this producer) from /proc: a
writer near 100% is the limit partitions lift; all of them together near the
machine's CPUs means the machine is the limit.

Redis: database 14 of the local server (flushed before and after).

    python benchmarks/write_partitions.py [--per-book 60] [--learn-threads 8] [--latency 0] [--rounds 3]
        [--redis-url redis://127.0.0.1:6379/14]
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import time
from contextlib import ExitStack

from bench_db import DEFAULT_REDIS_URL, bench_redis
from learning_throughput import wait_for_workers
from processes import cpu_seconds, worker_process
from rounds import ratio_spread, round_order, spread_text

from ace_workers.distributed.service import Service, build_service
from ace_workers.distributed.settings import WorkerSettings, write_partition
from ace_workers.sim import failure_traces

SKILLBOOKS = 8
WRITES_PER_SAMPLE = 2  # TagStep and ApplyStep


def skillbook_names(partitions: int) -> list[str]:
    """Eight skillbook names spread evenly over the partitions (as many on each)."""
    names: list[str] = []
    for partition in range(partitions):
        candidates = (f"book-{n}" for n in range(10_000))
        names += [n for n in candidates if write_partition(n, partitions) == partition][
            : SKILLBOOKS // partitions
        ]
    return names


def run(service: Service, args: argparse.Namespace) -> tuple[float, dict[str, float]]:
    """Write steps per second with the service's partition count, and each process's CPU share."""
    settings = service.runtime.settings
    partitions = settings.write_partitions
    writers = [f"write.{k}" for k in range(partitions)] if partitions > 1 else ["write"]
    with ExitStack() as stack:
        layouts = [("learn", "execute,learn", args.learn_threads)] + [(role, role, 1) for role in writers]
        processes = {
            role: stack.enter_context(
                worker_process(settings, queues, threads, f"{role}@bench", fields=("write_partitions",))
            )
            for role, queues, threads in layouts
        }
        wait_for_workers(service, [f"{name}@bench" for name in processes])
        pids = {name: p.pid for name, p in processes.items()}
        pids["redis"] = int(service.runtime.redis.info("server")["process_id"])
        pids["this producer"] = os.getpid()
        before = {name: cpu_seconds(pid) for name, pid in pids.items()}
        started = time.perf_counter()
        handles = [
            service.producer.enqueue_traces(failure_traces(args.per_book, seed=n), book)
            for n, book in enumerate(skillbook_names(partitions))
        ]
        for handle in handles:
            status = handle.wait(timeout=args.timeout)
            if (status.done, status.failed) != (args.per_book, 0):
                raise SystemExit(f"{partitions} partitions: {status.done} done, {status.failed} failed")
        elapsed = time.perf_counter() - started
        shares = {name: (cpu_seconds(pid) - before[name]) / elapsed for name, pid in pids.items()}
    return SKILLBOOKS * args.per_book * WRITES_PER_SAMPLE / elapsed, shares


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--per-book", type=int, default=60, help="traces per skillbook")
    parser.add_argument("--learn-threads", type=int, default=8)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds per simulated LLM call")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of 1 and 2 partitions, in turns")
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--redis-url", default=DEFAULT_REDIS_URL)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    results: dict[int, list[tuple[float, dict[str, float]]]] = {1: [], 2: []}
    with bench_redis(args.redis_url) as url:
        for number in range(args.rounds):
            for partitions in round_order((1, 2), number):
                settings = WorkerSettings(
                    redis_url=url,
                    queue_prefix=f"benchwpart{partitions}r{number}",  # new skillbooks each round
                    sim_latency_seconds=args.latency,
                    write_partitions=partitions,
                )
                service = build_service(settings, redis_url=url)
                try:
                    results[partitions].append(run(service, args))
                finally:
                    service.close()
                rate, shares = results[partitions][-1]
                cpu = ", ".join(f"{name} {share:.0%}" for name, share in shares.items())
                print(
                    f"round {number + 1}, {partitions} partition(s): {rate:8.1f} write steps/s   "
                    f"CPU per process: {cpu}; all together {sum(shares.values()):.0%}",
                    flush=True,
                )
    print(
        f"{SKILLBOOKS} skillbooks x {args.per_book} traces, {WRITES_PER_SAMPLE} writes per sample, "
        f"learn worker {args.learn_threads} threads, simulated LLM {args.latency * 1000:.0f} ms/call, "
        f"{os.cpu_count()} CPUs (of {(os.cpu_count() or 1) * 100}% CPU), {args.rounds} rounds in turns"
    )
    rates = {partitions: [rate for rate, _ in runs] for partitions, runs in results.items()}
    for partitions, values in rates.items():
        print(f"{partitions} partition(s): median {statistics.median(values):8.1f} write steps/s")
    print(f"2 vs 1 partitions, per round: {spread_text(ratio_spread(rates[2], rates[1]))}")


if __name__ == "__main__":
    main()
