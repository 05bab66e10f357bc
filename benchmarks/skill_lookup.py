"""What the SkillManager's lookup (ACE_SKILL_LOOKUP=similar) costs: ms per call, and learning throughput.

1. Added milliseconds per SkillManager call at ``--skills`` (100,000) synthetic skills
   (benchmarks/skillbook_scale.py's): the prompt build with the lookup off, with it on
   (the similar skills, found on the prompt index), and with it on and the pending
   proposals read from a real store holding ``--pending`` of them (two Redis round trips).
   Each round builds the prompts of ``--calls`` reflections (each learning drawn from the
   skills' vocabulary) with each setting, the order alternating between rounds. Goal:
   <= 5 ms added per call.
2. Learning throughput with the lookup on against off: in-process workers (``--slots``
   learn threads and the single writer), the simulated LLM sleeping ``--latency`` (200 ms)
   per call, each run learning ``--samples`` failure traces into a skillbook of
   ``--throughput-skills`` (10,000) imported skills. Rounds alternate which setting goes
   first. Goal: on/off >= 0.95. With ``--paraphrase`` each lesson is worded per sample, so
   learn slots adding one lesson side by side cost the later ones a second SkillManager
   call (the ADDs in flight; docs/learning.md): the cost of adding it once.

Figures are min/median/max over ``--rounds`` rounds.

Redis: database 14 of the local server (flushed before and after), or ``--embedded``.

    python benchmarks/skill_lookup.py [--skills 100000] [--calls 50] [--pending 20] [--rounds 5]
        [--samples 24] [--slots 4] [--latency 0.2] [--throughput-skills 10000] [--paraphrase]
        [--redis-url redis://127.0.0.1:6379/14 | --embedded]
"""

from __future__ import annotations

import argparse
import logging
import random
import time
from collections.abc import Callable

from bench_db import add_redis_options, bench_redis, chosen_redis
from learning_throughput import workers_for
from rounds import Spread, round_order
from skillbook_scale import VOCABULARY, synthetic_skillbook

from ace_workers.core import (
    ExtractedLearning,
    ReflectorOutput,
    Skillbook,
    SkillbookView,
    UpdateBatch,
    UpdateOperation,
)
from ace_workers.core.skill_lookup import LOOKUP_OFF, LOOKUP_SIMILAR, SkillLookup
from ace_workers.distributed.service import Service, build_service
from ace_workers.distributed.settings import WorkerSettings
from ace_workers.distributed.store.pending_operations import PendingOperations
from ace_workers.distributed.store.review_policy import parse_policy
from ace_workers.distributed.store.store import RedisSkillbookStore
from ace_workers.roles import SkillManager
from ace_workers.sim import SimulatedLLM, failure_traces

ADDED_MS_GOAL = 5.0
THROUGHPUT_GOAL = 0.95


def reflections(count: int, seed: int = 3) -> list[ReflectorOutput]:
    """Reflections whose learning and diagnosis use the synthetic skills' words, as real ones share."""
    rng = random.Random(seed)
    words = [f"w{index}{chr(97 + index % 26)}" for index in range(VOCABULARY)]
    made = []
    for _ in range(count):
        learning = f"When {' '.join(rng.choices(words, k=14))}, check it first."
        made.append(
            ReflectorOutput(
                reasoning="The answer was wrong.",
                error_identification=f"The agent skipped {' '.join(rng.choices(words, k=8))}.",
                key_insight=learning,
                correct_approach=learning,
                extracted_learnings=[ExtractedLearning(learning=learning, evidence="a trace")],
            )
        )
    return made


def seed_pending(store: RedisSkillbookStore, count: int) -> None:
    """``count`` pending ADD proposals in ``store``, under a policy that reviews ADDs."""
    store.review.set_policy(parse_policy("ADD=review"), actor="user:bench")
    for number in range(count):
        batch = UpdateBatch(
            reasoning="seeded",
            operations=[
                UpdateOperation(type="ADD", section="bench", content=f"Check w{number}a before w{number}b.")
            ],
        )
        store.review.propose_update(batch, idempotency_key=f"seed-{number}")


def per_call_ms(manager: SkillManager, view: SkillbookView, batch: list[ReflectorOutput]) -> float:
    """Mean milliseconds of one SkillManager prompt build over ``batch``."""
    start = time.perf_counter()
    for reflection in batch:
        manager.build_prompt(reflection, view, "question: a synthetic task")
    return (time.perf_counter() - start) * 1000 / len(batch)


def added_ms(args: argparse.Namespace, url: str) -> dict[str, list[float]]:
    """Per round: the ms per call with the lookup off, and what the lookup adds (alone; with pending)."""
    view = SkillbookView(synthetic_skillbook(args.skills, occurrences=0))
    service = build_service(WorkerSettings(redis_url=url, queue_prefix="benchsl"), redis_url=url)
    try:
        store = service.runtime.store("lookup-pending")
        seed_pending(store, args.pending)
        llm = SimulatedLLM()
        managers: dict[str, SkillManager] = {
            "off": SkillManager(llm, lookup=SkillLookup(mode=LOOKUP_OFF)),
            "similar": SkillManager(llm, lookup=SkillLookup(mode=LOOKUP_SIMILAR)),
            "similar+pending": SkillManager(
                llm,
                lookup=SkillLookup(mode=LOOKUP_SIMILAR),
                pending=PendingOperations(service.runtime.redis, store.keys),
            ),
        }
        batch = reflections(args.calls)
        for manager in managers.values():  # warm: the prompt index is built on the first call
            per_call_ms(manager, view, batch[:2])
        figures: dict[str, list[float]] = {name: [] for name in managers}
        for round_number in range(args.rounds):
            for name in round_order(list(managers), round_number):
                figures[name].append(per_call_ms(managers[name], view, batch))
    finally:
        service.close()
    return {
        "off ms/call": figures["off"],
        "added ms (similar)": [on - off for on, off in zip(figures["similar"], figures["off"], strict=True)],
        "added ms (similar+pending)": [
            on - off for on, off in zip(figures["similar+pending"], figures["off"], strict=True)
        ],
    }


def learn_seconds(service: Service, name: str, book: Skillbook, args: argparse.Namespace) -> float:
    """Seconds for in-process workers to learn ``--samples`` traces into a fresh copy of ``book``."""
    service.runtime.store(name).import_skillbook(book)
    traces = failure_traces(args.samples)
    with workers_for(service, "threads", args.slots, bare=False):
        start = time.perf_counter()
        status = service.producer.enqueue_traces(traces, name).wait(timeout=args.timeout)
        elapsed = time.perf_counter() - start
    if (status.done, status.failed) != (len(traces), 0):
        raise SystemExit(f"benchmark run is wrong: {status.done} done, {status.failed} failed")
    return elapsed


def throughput_ratios(args: argparse.Namespace, url: str) -> list[float]:
    """Per round: samples/s with the lookup on divided by samples/s with it off."""
    book = synthetic_skillbook(args.throughput_skills, occurrences=0)
    services = {
        mode: build_service(
            WorkerSettings(
                redis_url=url,
                queue_prefix=f"benchsl{mode}",
                sim_latency_seconds=args.latency,
                skill_lookup=mode,
                # Lessons worded per sample: side-by-side ADDs of one lesson then cost a second call.
                sim_paraphrase=args.paraphrase,
            ),
            redis_url=url,
        )
        for mode in (LOOKUP_SIMILAR, LOOKUP_OFF)
    }
    ratios = []
    try:
        for round_number in range(args.rounds):
            seconds = {
                mode: learn_seconds(services[mode], f"run-{round_number}", book, args)
                for mode in round_order((LOOKUP_SIMILAR, LOOKUP_OFF), round_number)
            }
            ratios.append(seconds[LOOKUP_OFF] / seconds[LOOKUP_SIMILAR])  # rate on / rate off
    finally:
        for service in services.values():
            service.close()
    return ratios


def line(name: str, values: list[float], goal: str, met: Callable[[float], bool] | None) -> str:
    """One row of the table: the figure's min, median and max, its goal and whether the median meets it."""
    spread = Spread.of(values)
    verdict = "" if met is None else ("yes" if met(spread.median) else "NO")
    return f"{name:28} {spread.min:9.3f} {spread.median:9.3f} {spread.max:9.3f}  {goal:>9} {verdict}"


def main() -> None:
    """Measure and print the lookup's added ms per call and its throughput ratio."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--skills", type=int, default=100_000)
    parser.add_argument("--calls", type=int, default=50, help="SkillManager prompts per setting and round")
    parser.add_argument("--pending", type=int, default=20, help="pending proposals in the store")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--samples", type=int, default=24, help="traces learned per throughput run")
    parser.add_argument("--slots", type=int, default=4, help="learn threads")
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per simulated LLM call")
    parser.add_argument("--throughput-skills", type=int, default=10_000)
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument(
        "--paraphrase",
        action="store_true",
        help="the simulator words each lesson per sample (ACE_SIM_PARAPHRASE)",
    )
    add_redis_options(parser)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    with bench_redis(chosen_redis(args)) as url:
        costs = added_ms(args, url)
        ratios = throughput_ratios(args, url)
    print(f"SkillManager lookup at {args.skills:,} skills, {args.rounds} rounds (alternating order)")
    print(f"{'figure':28} {'min':>9} {'median':>9} {'max':>9}  {'goal':>9} met")
    print(line("off ms/call", costs["off ms/call"], "", None))
    for name in ("added ms (similar)", "added ms (similar+pending)"):
        print(line(name, costs[name], f"<= {ADDED_MS_GOAL:g}", lambda v: v <= ADDED_MS_GOAL))
    print(
        line(
            f"throughput on/off ({args.latency * 1000:g} ms)",
            ratios,
            f">= {THROUGHPUT_GOAL:g}",
            lambda v: v >= THROUGHPUT_GOAL,
        )
    )


if __name__ == "__main__":
    main()
