"""Redaction's cost: milliseconds per 4 KB trace, and learning throughput with redaction on and off.

1. Cost. Traces of about 4 KB (a question, an answer and tool steps, with an API key, an AWS
   key, an e-mail address, a card and a phone number planted in them) are redacted with the
   default kinds as the producer does (``redact_context``), each trace once per round; printed
   as min/median/max milliseconds per trace over the rounds. Goal: at most 2 ms.

2. Throughput. The same traces are learned by a fleet run as learning_throughput.py runs one:
   one worker process serving execute and learn with ``--slots`` threads and one write worker
   with one thread (or ``--workers threads``: both in this process), the simulated LLM sleeping
   ``--latency`` (200 ms) per call. Each round learns a batch with ACE_REDACT=default (producer
   and workers redact) and one with ACE_REDACT=off, on fresh workers, in alternating order (on
   first in odd rounds), and prints the ratio of samples/s on to off as min/median/max over the
   rounds. Goal: at least 0.95.

Redis: database 14 of the local server (flushed before and after), or ``--embedded``.

    python benchmarks/redaction.py [--rounds 5] [--cost-rounds 200] [--slots 4] [--per-slot 12]
        [--latency 0.2] [--workers processes|threads] [--redis-url redis://127.0.0.1:6379/14 | --embedded]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

from bench_db import add_redis_options, bench_redis, chosen_redis
from learning_throughput import run_ours, wait_for_workers
from processes import worker_process
from rounds import Spread, round_order

from ace_workers.core.context import ACEStepContext
from ace_workers.distributed.service import Service, build_service, local_workers
from ace_workers.distributed.settings import WorkerSettings
from ace_workers.redaction import redact_context, redactor_for

COST_GOAL_MS = 2.0
RATIO_GOAL = 0.95
TRACE_BYTES = 4096

_SENTENCE = (
    "the agent called the search tool for order 48213 and read the refund policy then asked the "
    "billing service at 12:30 on 2024-01-15 which answered that the card was declined twice so it "
    "retried with the saved method and wrote a summary for the customer"
)
_WORDS = _SENTENCE.split(" ")


def trace_of_4kb(number: int) -> dict[str, Any]:
    """A failure trace of about TRACE_BYTES bytes of JSON with secrets and personal data in it."""
    steps: list[dict[str, str]] = []
    size = 300
    while size < TRACE_BYTES:
        text = " ".join(_WORDS[(number + len(steps) * 7 + i) % len(_WORDS)] for i in range(16))
        steps.append({"tool": "search", "output": text})
        size += len(text) + 30
    steps[1]["output"] += f" key sk-live-4eC39HqLyjWDarjtT1zdp7dc{number:04d}"
    steps[3]["output"] += " credentials AKIAZ7QXRV4MPL2NW3JD"
    steps[5]["output"] += f" card 4539 1488 0343 6467 phone +1 415 555 {2600 + number % 100:04d}"
    return {
        "question": f"Why was refund {number} for jane.roe{number}@example.org refused?",
        "answer": f"I wrote to jane.roe{number}@example.org.",
        "feedback": "Incorrect.",
        "ground_truth": "Refunds go back to the original card.",
        "steps": steps[:-1],
    }


def measure_cost(traces: list[dict[str, Any]], rounds: int) -> dict[str, list[float]]:
    """Milliseconds per trace of each round, wall clock and this thread's CPU time: every trace
    redacted once, as the producer does it; and, for scale, a JSON round trip of each (encode and
    decode, which a payload pays anyway) timed the same way."""
    redactor = redactor_for("default")
    contexts = [ACEStepContext(trace=trace) for trace in traces]
    redact_context(redactor, contexts[0])  # builds the detectors, imports detect-secrets
    figures: dict[str, list[float]] = {"wall": [], "cpu": [], "json_cpu": []}
    for _ in range(rounds):
        wall, cpu = time.perf_counter(), time.thread_time()
        for ctx in contexts:
            redact_context(redactor, ctx)
        figures["cpu"].append((time.thread_time() - cpu) * 1000 / len(contexts))
        figures["wall"].append((time.perf_counter() - wall) * 1000 / len(contexts))
        cpu = time.thread_time()
        for trace in traces:
            json.loads(json.dumps(trace))
        figures["json_cpu"].append((time.thread_time() - cpu) * 1000 / len(traces))
    return figures


@contextmanager
def fleet(url: str, redact: str, args: argparse.Namespace, round_number: int) -> Iterator[Service]:
    """A producer and fresh workers with ACE_REDACT=``redact``."""
    prefix = f"benchred{round_number}{redact[:2]}"
    settings = WorkerSettings(
        redis_url=url, queue_prefix=prefix, sim_latency_seconds=args.latency, redact=redact
    )
    service = build_service(settings, redis_url=url)
    try:
        if args.workers == "threads":
            with local_workers(service, learn_threads=args.slots):
                yield service
        else:
            with worker_processes(service, args.slots):
                yield service
    finally:
        service.close()


@contextmanager
def worker_processes(service: Service, slots: int) -> Iterator[None]:
    """learning_throughput.py's layout (execute+learn: ``slots`` threads; write: one), this process's code."""
    settings, names = service.runtime.settings, []
    with ExitStack() as stack:
        for queues, concurrency, role in (("execute,learn", slots, "learn"), ("write", 1, "write")):
            name = f"benchred-{role}-{os.getpid()}@localhost"
            names.append(name)
            stack.enter_context(worker_process(settings, queues, concurrency, name, fields=("redact",)))
        wait_for_workers(service, names)
        yield


def measure_throughput(url: str, args: argparse.Namespace) -> list[tuple[float, float]]:
    """(samples/s on, samples/s off) per round, the order alternating."""
    traces = [trace_of_4kb(number) for number in range(args.per_slot * args.slots)]
    rows = []
    for round_number in range(1, args.rounds + 1):
        order = round_order(("default", "off"), round_number - 1)
        rates: dict[str, float] = {}
        for redact in order:
            with fleet(url, redact, args, round_number) as service:
                elapsed = run_ours(service, args.slots, traces, args.timeout, f"throughput-{round_number}")
            rates[redact] = len(traces) / elapsed
        rows.append((rates["default"], rates["off"]))
        print(
            f"round {round_number} ({' then '.join(order)}): on {rates['default']:.2f} samples/s, "
            f"off {rates['off']:.2f} samples/s, ratio {rates['default'] / rates['off']:.3f}",
            flush=True,
        )
    return rows


def main() -> None:
    """Measure and print the cost per trace and the throughput ratio, with the verdicts."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=5, help="throughput rounds (each: on and off)")
    parser.add_argument("--cost-rounds", type=int, default=200, help="rounds of the cost measurement")
    parser.add_argument("--slots", type=int, default=4, help="learn threads of the fleet")
    parser.add_argument("--per-slot", type=int, default=12, help="samples per learn slot in each batch")
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per simulated LLM call")
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--workers", choices=("processes", "threads"), default="processes")
    add_redis_options(parser)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)

    traces = [trace_of_4kb(number) for number in range(50)]
    kilobytes = statistics.mean(len(json.dumps(trace)) for trace in traces) / 1024
    cost = {name: Spread.of(values) for name, values in measure_cost(traces, args.cost_rounds).items()}
    print(
        f"redaction cost per {kilobytes:.1f} KB trace (default kinds), ms of CPU, min/median/max over "
        f"{args.cost_rounds} rounds: {cost['cpu'].figures(3)}"
    )
    print(f"  wall clock, ms: {cost['wall'].figures(3)}")
    print(f"  for scale, a JSON encode and decode of the trace, ms of CPU: {cost['json_cpu'].figures(3)}")
    met = cost["cpu"].median <= COST_GOAL_MS
    print(f"  goal <= {COST_GOAL_MS} ms of CPU (median): {'met' if met else 'NOT met'}")

    with bench_redis(chosen_redis(args)) as url:
        rows = measure_throughput(url, args)
    ratio = Spread.of([on / off for on, off in rows])
    print(
        f"learning throughput, redaction on / off at {args.latency * 1000:.0f} ms per call, min/median/max "
        f"over {ratio.count} rounds: {ratio.figures(3)}"
    )
    print(f"  goal >= {RATIO_GOAL} (median): {'met' if ratio.median >= RATIO_GOAL else 'NOT met'}")


if __name__ == "__main__":
    main()
