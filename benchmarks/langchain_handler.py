"""What learning adds to a LangChain app's own calls, measured in this process.

A chain of a prompt template and LangChain's fake chat model (it answers at
once, so what is measured is the overhead itself) is invoked ``--runs`` times:

1. bare, with no callback handler;
2. with ``RunRecorder`` (what ``LangChainExecuteStep`` adds: the run recorded);
3. with ``AceCallbackHandler`` sending each run to Redis as a one-trace batch
   (batch size 1) and 20 traces a batch; the handler's thread sends, so the
   figure is what the chain's own thread pays (recording, converting, handing
   over), and the time to send them all is printed beside it; no workers run;
4. with ``AceCallbackHandler`` while Redis is unreachable: what a user's chain
   pays per run during an outage.

Figures are per invoke (median over the runs, in ms) and the ratio to bare.

    python benchmarks/langchain_handler.py [--runs 200] [--redis-url redis://127.0.0.1:6379/14 | --embedded]
"""

from __future__ import annotations

import argparse
import logging
import statistics
import time
from collections.abc import Callable
from typing import Any

from bench_db import DEFAULT_REDIS_URL, bench_redis
from langchain_core.language_models import FakeListChatModel
from langchain_core.prompts import ChatPromptTemplate

from ace_workers.distributed import Producer
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


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=200)
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--redis-url", default=DEFAULT_REDIS_URL)
    where.add_argument("--embedded", action="store_true", help="an embedded Redis instead of db 14")
    args = parser.parse_args()
    logging.disable(logging.WARNING)  # the outage run logs a warning per run

    chain = ChatPromptTemplate.from_template("Answer: {input}") | FakeListChatModel(responses=["42"])

    def invoke_with(*handlers: Any) -> Callable[[int], Any]:
        config = {"callbacks": list(handlers)} if handlers else {}
        return lambda n: chain.invoke({"input": f"question {n}"}, config=config)

    median_ms(20, invoke_with())  # warm up
    figures = {"bare": median_ms(args.runs, invoke_with())}
    figures["RunRecorder"] = median_ms(args.runs, invoke_with(RunRecorder(lambda run: None)))
    with (
        bench_redis(None if args.embedded else args.redis_url) as url,
        Producer(WorkerSettings(redis_url=url)) as producer,
    ):
        for batch_size in (1, 20):
            handler = AceCallbackHandler(producer, "bench", batch_size=batch_size)
            started = time.perf_counter()
            figures[f"AceCallbackHandler, batch {batch_size}"] = median_ms(args.runs, invoke_with(handler))
            handler.close()
            sent_in = time.perf_counter() - started
            assert handler.stats.sent == args.runs and handler.pending == 0, handler.stats
            print(
                f"batch {batch_size}: {args.runs} traces sent in {handler.stats.batches} batches, "
                f"all sent {sent_in:.2f} s after the first invoke"
            )
    with Producer(WorkerSettings(redis_url="redis://127.0.0.1:1/14")) as unreachable:
        handler = AceCallbackHandler(unreachable, "bench", max_pending=args.runs)
        figures["AceCallbackHandler, Redis down"] = median_ms(args.runs, invoke_with(handler))
        assert handler.stats.failed_sends >= 1 and handler.pending == args.runs, handler.stats
        handler.close()

    print(f"{args.runs} invokes of a prompt | fake chat model chain, median per invoke:")
    for name, value in figures.items():
        print(f"  {name:34} {value:7.2f} ms  ({value / figures['bare']:.2f} x bare)")


if __name__ == "__main__":
    main()
