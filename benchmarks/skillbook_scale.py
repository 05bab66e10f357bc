"""Learning cost against skillbook size: fresh skillbook vs 10,000 and 100,000 skills.

For each size the skillbook is first imported with that many synthetic skills
(varied words over 40 sections, as a long-lived skillbook looks). Then, in each
of ``--rounds`` rounds (the sizes in alternating order: forward, then back), a
level runs the worker layout of benchmarks/learning_throughput.py as new
processes: one ``ace-workers worker --queues execute,learn --concurrency 16``
process and the single writer, the simulated LLM sleeping ``--latency`` (200 ms)
per call. It measures, in order:

- cold start: the first sample of a fresh learn worker (the writer already
  warm), and the first sample through a fresh writer (the learn worker warm),
  each timed from enqueue to done once the new process answers pings; also
  the new learn worker's seconds from its process start to its first sample
  done, and the new process's CPU seconds during its first sample (utime +
  stime from /proc: wall time on a shared machine waits for other processes' CPU too).
  (The level's very first sample, both processes new, warms them up; in
  the first round it is the skillbook's first whole read since its import.)
- throughput: a warm-up batch, then the timed batch (samples/s).
- memory: the learn worker's resident set (VmRSS) after the timed batch; the
  difference to the fresh level is what the skillbook costs a worker.
- prompt build, in this process, on the store's cached snapshot: the agent
  prompt (``as_prompt`` with the default budget and a task as the query), the
  median of ``--prompt-calls`` calls.

Each figure is printed per size as min/median/max over the rounds, and each
size against fresh as min/median/max of the per-round ratios.

Targets (issue 40): at 100,000 skills >= 0.9x the fresh rate, first sample of a
fresh learn worker and of a fresh writer <= 2 s, learn worker memory <= +150 MiB
over fresh, prompt build <= 2 ms.

Provenance: each synthetic skill carries ``--occurrences`` (5, the default of
ACE_PROVENANCE_KEEP) occurrences as learning leaves them: its ADD and TAGs,
each with a batch id, sample, trace id, recipe, key insight, actor and time.
``--occurrences 0`` imports skills with none, as before provenance existed.

The worker processes import the ace_workers this process imports (a worktree's
with PYTHONPATH at its root), so a worktree measures its own code.

Redis: database 14 of the local server (flushed before and after), or ``--embedded``: a
private one.

``--prompt-only`` measures the prompt build alone, in this process, with no Redis
and no workers: each size's synthetic skillbook is loaded as a worker loads the
store's compact snapshot, then ``--learned`` (200) skills stating the simulated
tasks' rules are added as a derived version (as learning leaves them, so a task's
words find some skills). Each round times ``--prompt-calls`` tasks on each size in
alternating order; the median of each round is printed as min/median/max over the
rounds. It runs on whichever ace_workers PYTHONPATH names, so two checkouts compare.

    python benchmarks/skillbook_scale.py [--sizes 0,10000,100000] [--rounds 3] [--per-slot 10]
        [--slots 16] [--latency 0.2] [--occurrences 5] [--redis-url redis://127.0.0.1:6379/14 | --embedded]
    python benchmarks/skillbook_scale.py --prompt-only [--sizes 0,100000] [--rounds 5] [--learned 200]
"""

from __future__ import annotations

import argparse
import logging
import os
import random
import statistics
import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from bench_db import add_redis_options, bench_redis, chosen_redis
from processes import cpu_seconds, stop_process, worker_process
from rounds import Spread, round_order

from ace_workers.core import DEFAULT_PROMPT_BUDGET, Skillbook, SkillbookView
from ace_workers.core.compact_snapshot import pack_snapshot, unpack_snapshot
from ace_workers.core.skill_ids import format_skill_id
from ace_workers.core.skill_provenance import DEFAULT_KEEP, INSIGHT_CHARS
from ace_workers.distributed.service import Service, build_service
from ace_workers.distributed.settings import WorkerSettings
from ace_workers.sim import failure_traces
from ace_workers.sim.tasks import TOPICS

TARGETS = {10_000: 0.9, 100_000: 0.9}  # rate against fresh
PROMPT_TARGET_MS = 2.0
TARGET_SIZE = 100_000  # the size the absolute targets below are for
FIRST_SAMPLE_TARGET_S = 2.0  # a fresh learn worker's first sample, and a fresh writer's
MEMORY_TARGET_MIB = 150.0  # the learn worker's resident set over fresh
WORKER_START_SECONDS = 300.0  # a loaded 2-core machine may take minutes to start a worker
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


def prompt_build_ms(view: SkillbookView, calls: int) -> float:
    """Median milliseconds of the agent's prompt table over ``calls`` tasks, on a snapshot ``view``."""
    queries = [trace["question"] for trace in failure_traces(calls, seed=3)]
    view.as_prompt(DEFAULT_PROMPT_BUDGET, queries[0])  # the first call may build what later ones reuse
    timings = []
    for query in queries:
        started = time.perf_counter()
        view.as_prompt(DEFAULT_PROMPT_BUDGET, query)
        timings.append((time.perf_counter() - started) * 1000)
    return statistics.median(timings)


@contextmanager
def answering_worker(service: Service, role: str, slots: int) -> Iterator[subprocess.Popen[bytes]]:
    """A new ``ace-workers worker`` process of this checkout for ``role`` (learn or write), up and running."""
    queues, threads = ("execute,learn", slots) if role == "learn" else ("write", 1)
    name = f"scale-{role}-{uuid.uuid4().hex[:6]}@localhost"
    with worker_process(service.runtime.settings, queues, threads, name) as process:
        answering(service, name, process)
        yield process


def answering(service: Service, name: str, process: subprocess.Popen[bytes]) -> None:
    """Block until worker ``name`` answers a ping (SystemExit if it ends or takes WORKER_START_SECONDS)."""
    deadline = time.monotonic() + WORKER_START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"worker {name} ended with exit code {process.returncode} before it answered")
        replies = service.app.control.ping(destination=[name], timeout=1.0) or []
        if any(name in reply for reply in replies):
            return
    raise SystemExit(f"worker {name} did not answer a ping within {WORKER_START_SECONDS:.0f} s")


def one_sample_seconds(service: Service, name: str, seed: int, timeout: float) -> float:
    """Seconds from enqueueing one sample into ``name`` to its end (SystemExit if it failed)."""
    started = time.perf_counter()
    status = service.producer.enqueue_traces(failure_traces(1, seed=seed), name).wait(timeout=timeout)
    if (status.done, status.failed) != (1, 0):
        raise SystemExit(f"{name}: a single sample did not learn ({status.failed} failed)")
    return time.perf_counter() - started


def run_level(service: Service, size: int, round_number: int, args: argparse.Namespace) -> dict[str, float]:
    """Cold starts, then learning into the ``size``-skill skillbook with new workers; the figures."""
    name = f"scale-{size}" if size else f"scale-0-{round_number}"  # fresh: a new one each round
    samples = args.per_slot * args.slots
    figures: dict[str, float] = {}
    seed = 1000 * round_number
    with ExitStack() as workers:

        def new_worker(role: str) -> subprocess.Popen[bytes]:
            return workers.enter_context(answering_worker(service, role, args.slots))

        writer, learn = new_worker("write"), new_worker("learn")
        figures["both_new_s"] = one_sample_seconds(service, name, seed + 1, args.timeout)
        stop_process(learn)  # a new learn worker, the writer warm
        launched = time.perf_counter()
        learn = new_worker("learn")
        cpu_before = cpu_seconds(learn.pid)
        figures["learn_first_s"] = one_sample_seconds(service, name, seed + 2, args.timeout)
        figures["learn_first_cpu_s"] = cpu_seconds(learn.pid) - cpu_before
        figures["learn_from_start_s"] = time.perf_counter() - launched
        stop_process(writer)  # a new writer, the learn worker warm
        writer = new_worker("write")
        cpu_before = cpu_seconds(writer.pid)
        figures["writer_first_s"] = one_sample_seconds(service, name, seed + 3, args.timeout)
        figures["writer_first_cpu_s"] = cpu_seconds(writer.pid) - cpu_before
        warm_up = service.producer.enqueue_traces(failure_traces(WARM_UP_SAMPLES, seed=seed + 5), name)
        warm_up.wait(timeout=args.timeout)
        started = time.perf_counter()
        handle = service.producer.enqueue_traces(failure_traces(samples, seed=seed + 9), name)
        status = handle.wait(timeout=args.timeout)
        elapsed = time.perf_counter() - started
        figures["rss_mib"] = resident_kib(learn.pid) / 1024
    if (status.done, status.failed) != (samples, 0):
        raise SystemExit(f"{size:,} skills: {status.done} done, {status.failed} failed of {samples}")
    figures["rate"] = samples / elapsed
    _, view = service.runtime.store(name).cached_snapshot()
    figures["prompt_ms"] = prompt_build_ms(view, args.prompt_calls)
    print(
        f"  round {round_number + 1}, {size:,} skills: {figures['rate']:.2f} samples/s, first sample "
        f"{figures['learn_first_s']:.2f} s (learn) {figures['writer_first_s']:.2f} s (writer), "
        f"{figures['rss_mib']:.0f} MiB, prompt {figures['prompt_ms']:.2f} ms",
        flush=True,
    )
    return figures


def learned_snapshot(size: int, learned: int) -> Skillbook:
    """A worker's snapshot of ``size`` synthetic skills, loaded from the compact form, then a derived
    version with ``learned`` skills stating the simulated tasks' rules (some helpful)."""
    book = synthetic_skillbook(size, occurrences=0)  # a worker's cached snapshot carries no provenance
    _, snapshot = unpack_snapshot(pack_snapshot(book, version=1, incarnation=None), "benchmark")
    rng = random.Random(5)
    changes: dict[str, dict[str, Any] | None] = {}
    for number in range(learned):
        topic = TOPICS[number % len(TOPICS)]
        skill_id = format_skill_id("puzzles", size + 1 + number)
        changes[skill_id] = {
            "id": skill_id,
            "section": "puzzles",
            "content": topic.phrase_rule(str(number), seed=number),
            "helpful": rng.randint(0, 3),
            "harmful": 0,
            "neutral": 0,
            "status": "active",
        }
    return snapshot.with_changes([changes], next_id=size + 1 + learned, order_of_new=str)


def first_call_ms(book: Skillbook, round_number: int) -> float:
    """Milliseconds of the first prompt on the version after ``book``: its last skill voted helpful.

    What a worker pays once per version for what later calls reuse.
    """
    last = book.get_skill(book.skill_columns(["id"])["id"][-1])
    assert last is not None
    skill = last.to_dict()
    skill["helpful"] += 1 + round_number
    version = book.with_changes([{skill["id"]: skill}], next_id=book.next_id_number, order_of_new=str)
    query = failure_traces(1, seed=round_number)[0]["question"]
    started = time.perf_counter()
    SkillbookView(version).as_prompt(DEFAULT_PROMPT_BUDGET, query)
    return (time.perf_counter() - started) * 1000


def prompt_only(sizes: list[int], args: argparse.Namespace) -> None:
    """The prompt build alone on each size's learned snapshot, in alternating rounds; the figures."""
    books = {}
    for size in sizes:
        started = time.perf_counter()
        books[size] = learned_snapshot(size, args.learned)
        print(f"  {size:,} skills (+{args.learned} learned) loaded in {time.perf_counter() - started:.1f} s")
    timings: dict[int, list[float]] = {size: [] for size in sizes}
    firsts: dict[int, list[float]] = {size: [] for size in sizes}
    for number in range(args.rounds):
        for size in round_order(sizes, number):
            timings[size].append(prompt_build_ms(SkillbookView(books[size]), args.prompt_calls))
            firsts[size].append(first_call_ms(books[size], number))
    print(
        f"prompt build (as_prompt, default budget, a task as the query): the median of "
        f"{args.prompt_calls} calls per round, and the first call on a new version, min/median/max "
        f"over {args.rounds} rounds"
    )
    for size in sizes:
        print(
            f"  {size:,} skills: {Spread.of(timings[size]).figures(unit=' ms')}, "
            f"first on a new version {Spread.of(firsts[size]).figures(unit=' ms')}"
        )
    if TARGET_SIZE in sizes:
        prompt_ms = statistics.median(timings[TARGET_SIZE])
        print(f"prompt build at {TARGET_SIZE:,}: {prompt_ms:.2f} ms (target <= {PROMPT_TARGET_MS} ms)")
        print("PASS" if prompt_ms <= PROMPT_TARGET_MS else "BELOW TARGET")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="0,10000,100000", help="comma-separated skillbook sizes")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, the sizes in alternating order")
    parser.add_argument("--slots", type=int, default=16, help="learn threads of the learn worker")
    parser.add_argument("--per-slot", type=int, default=10, help="timed samples per learn thread")
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per simulated LLM call")
    parser.add_argument("--prompt-calls", type=int, default=50)
    parser.add_argument(
        "--prompt-only", action="store_true", help="time the prompt build alone: no Redis, no workers"
    )
    parser.add_argument("--learned", type=int, default=200, help="--prompt-only: skills added as learned")
    parser.add_argument(
        "--occurrences", type=int, default=DEFAULT_KEEP, help="occurrences each synthetic skill carries"
    )
    parser.add_argument("--timeout", type=float, default=600.0)
    add_redis_options(parser)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    sizes = [int(size) for size in args.sizes.split(",")]
    if args.prompt_only:
        prompt_only(sizes, args)
        return
    if sizes[0] != 0:
        parser.error("--sizes must start with 0: the fresh skillbook is what the others compare with")
    rounds: list[dict[int, dict[str, float]]] = []
    limit = max(sizes) + 10_000  # room to learn into the largest skillbook
    os.environ["ACE_MAX_SKILLBOOK_SKILLS"] = str(limit)  # the worker processes inherit it
    with bench_redis(chosen_redis(args)) as url:
        settings = WorkerSettings(
            redis_url=url,
            queue_prefix="benchscale",
            sim_latency_seconds=args.latency,
            max_skillbook_skills=limit,
        )
        service = build_service(settings, redis_url=url)
        try:
            for size in sizes[1:]:
                started = time.perf_counter()
                book = synthetic_skillbook(size, occurrences=args.occurrences)
                # replace: a client timing out on a loaded machine retries an import Redis already took.
                service.runtime.store(f"scale-{size}").import_skillbook(book, replace=True)
                print(f"  {size:,} skills imported in {time.perf_counter() - started:.1f} s", flush=True)
            for number in range(args.rounds):
                order = round_order(sizes, number)  # no size always first
                rounds.append({size: run_level(service, size, number, args) for size in order})
        finally:
            service.close()
    report(rounds, sizes, args)


def report(rounds: list[dict[int, dict[str, float]]], sizes: list[int], args: argparse.Namespace) -> None:
    """Each figure per size as min/median/max over the rounds, the ratios to fresh, and the targets."""
    print(
        f"simulated LLM {args.latency * 1000:.0f} ms/call, {args.slots} learn threads + 1 writer, "
        f"{args.per_slot * args.slots} timed samples per size, {args.occurrences} occurrences per skill, "
        f"{len(rounds)} rounds in alternating order; each figure min/median/max over the rounds"
    )

    def figure(size: int, key: str) -> Spread:
        return Spread.of([row[size][key] for row in rounds])

    def against_fresh(size: int, key: str) -> Spread:
        return Spread.of([row[size][key] / row[0][key] for row in rounds])

    for size in sizes:
        to_fresh = against_fresh(size, "rate").figures(unit="x")
        extra = Spread.of([row[size]["rss_mib"] - row[0]["rss_mib"] for row in rounds])
        lines = {
            "samples/s": f"{figure(size, 'rate').figures()} ({to_fresh})",
            "first sample, new learn worker": figure(size, "learn_first_s").figures(unit=" s"),
            "first sample, new writer": figure(size, "writer_first_s").figures(unit=" s"),
            "  its CPU, new learn worker": figure(size, "learn_first_cpu_s").figures(unit=" s"),
            "  its CPU, new writer": figure(size, "writer_first_cpu_s").figures(unit=" s"),
            "learn worker start to first sample": figure(size, "learn_from_start_s").figures(unit=" s"),
            "first sample, both new": figure(size, "both_new_s").figures(unit=" s"),
            "prompt build": figure(size, "prompt_ms").figures(unit=" ms"),
            "worker MiB (over fresh)": f"{figure(size, 'rss_mib').figures(0)} (+{extra.figures(0)})",
        }
        print(f"{size:,} skills:")
        for label, text in lines.items():
            print(f"  {label:<36} {text}")
    first_round = rounds[0]
    for size in sizes[1:]:
        print(
            f"first sample after the import of {size:,} skills (both workers new, the skillbook's first "
            f"whole read): {first_round[size]['both_new_s']:.2f} s"
        )
    verdicts = []
    for size, target in TARGETS.items():
        if size in sizes:
            ratio = against_fresh(size, "rate").median
            verdicts.append(ratio >= target)
            print(f"rate at {size:,} skills: {ratio:.2f}x of fresh (median; target >= {target}x)")
    if TARGET_SIZE in sizes:
        for key, label in (("learn_first_s", "new learn worker"), ("writer_first_s", "new writer")):
            seconds = figure(TARGET_SIZE, key).median
            verdicts.append(seconds <= FIRST_SAMPLE_TARGET_S)
            target_s = FIRST_SAMPLE_TARGET_S
            print(f"first sample, {label}, at {TARGET_SIZE:,}: {seconds:.2f} s (target <= {target_s} s)")
        extra_mib = statistics.median(row[TARGET_SIZE]["rss_mib"] - row[0]["rss_mib"] for row in rounds)
        verdicts.append(extra_mib <= MEMORY_TARGET_MIB)
        target_mib = MEMORY_TARGET_MIB
        print(f"learn worker memory at {TARGET_SIZE:,}: +{extra_mib:.0f} MiB (target <= +{target_mib:.0f})")
        prompt_ms = figure(TARGET_SIZE, "prompt_ms").median
        verdicts.append(prompt_ms <= PROMPT_TARGET_MS)
        print(f"prompt build at {TARGET_SIZE:,}: {prompt_ms:.2f} ms (target <= {PROMPT_TARGET_MS} ms)")
    print("PASS" if verdicts and all(verdicts) else "BELOW TARGET")


if __name__ == "__main__":
    main()
