"""What learning adds to a LangChain app's own calls, measured in this process.

A chain of a prompt template and LangChain's fake chat model (it answers at
once, so what is measured is the overhead itself) is invoked ``--runs`` times:

1. bare, with no callback handler;
2. with ``RunRecorder`` (what ``LangChainExecuteStep`` adds: the run recorded);
3. with ``AceCallbackHandler`` sending each run to Redis as a one-trace batch
   (batch size 1) and 20 traces a batch; the handler's thread sends, so the
   figure is what the chain's own thread pays (recording, converting, handing
   over), and the time to send them all is printed beside it; no workers run;
4. with ``AceCallbackHandler`` while Redis is unreachable (an embedded server stopped
   once the producer connected): what a user's chain pays per run during an outage.

Figures are per invoke (median over the runs, in ms). The five run ``--rounds`` times in
turns (the order reversed every other round); the ratio to bare of each round is printed as
min/median/max.

    python benchmarks/langchain_handler.py [--runs 200] [--rounds 3]
        [--redis-url redis://127.0.0.1:6379/14 | --embedded]
"""

from __future__ import annotations

import argparse
import logging
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from bench_db import add_redis_options, bench_redis, chosen_redis
from langchain_core.language_models import FakeListChatModel
from langchain_core.prompts import ChatPromptTemplate
from rounds import ratio_spread, round_order, spread_text

from ace_workers.distributed import Producer
from ace_workers.distributed.ops.embedded_redis import EmbeddedRedis
from ace_workers.distributed.settings import WorkerSettings
from ace_workers.integrations.langchain import AceCallbackHandler
from ace_workers.integrations.langchain.recorder import RunRecorder


def median_ms(runs: int, invoke: Callable[[int], Any]) -> float:
    times = []
    for number in range(runs):
        started = time.perf_counter()
        invoke(number)
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


@contextmanager
def went_down() -> Iterator[Producer]:
    """A producer whose Redis stopped after it connected (a producer checks its Redis when made)."""
    server = EmbeddedRedis().start()
    try:
        producer = Producer(WorkerSettings(redis_url=server.redis_url))
    finally:
        server.stop()
    with producer:
        yield producer


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3, help="rounds of every configuration, in turns")
    add_redis_options(parser)
    args = parser.parse_args()
    logging.disable(logging.WARNING)  # the outage run logs a warning per run

    chain = ChatPromptTemplate.from_template("Answer: {input}") | FakeListChatModel(responses=["42"])

    def invoke_with(*handlers: Any) -> Callable[[int], Any]:
        config = {"callbacks": list(handlers)} if handlers else {}
        return lambda n: chain.invoke({"input": f"question {n}"}, config=config)

    median_ms(20, invoke_with())  # warm up

    def with_handler(producer: Producer, batch_size: int) -> float:
        handler = AceCallbackHandler(producer, "bench", batch_size=batch_size)
        figure = median_ms(args.runs, invoke_with(handler))
        handler.close()
        assert handler.stats.sent == args.runs and handler.pending == 0, handler.stats
        return figure

    def with_outage(unreachable: Producer) -> float:
        handler = AceCallbackHandler(unreachable, "bench", max_pending=args.runs)
        figure = median_ms(args.runs, invoke_with(handler))
        assert handler.stats.failed_sends >= 1 and handler.pending == args.runs, handler.stats
        handler.close()
        return figure

    figures: dict[str, list[float]] = {}
    with (
        bench_redis(chosen_redis(args)) as url,
        Producer(WorkerSettings(redis_url=url)) as producer,
        went_down() as unreachable,
    ):
        sides: dict[str, Callable[[], float]] = {
            "bare": lambda: median_ms(args.runs, invoke_with()),
            "RunRecorder": lambda: median_ms(args.runs, invoke_with(RunRecorder(lambda run: None))),
            "AceCallbackHandler, batch 1": lambda: with_handler(producer, 1),
            "AceCallbackHandler, batch 20": lambda: with_handler(producer, 20),
            "AceCallbackHandler, Redis down": lambda: with_outage(unreachable),
        }
        for number in range(args.rounds):  # in turns, so a busy machine weighs on all alike
            for name in round_order(list(sides), number):
                figures.setdefault(name, []).append(sides[name]())

    print(
        f"{args.runs} invokes of a prompt | fake chat model chain, median per invoke over {args.rounds} "
        "rounds in turns, and the ratio to bare per round:"
    )
    for name, values in figures.items():
        ratio = spread_text(ratio_spread(values, figures["bare"]))
        print(f"  {name:34} {statistics.median(values):7.2f} ms  (x bare: {ratio})")


if __name__ == "__main__":
    main()
