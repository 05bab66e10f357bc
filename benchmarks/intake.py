"""Intake throughput: traces accepted per second, POSTed in batches of 100 with an API key.

Intake is served in this process (uvicorn in a thread, as ``ace-workers intake`` serves it) on a
private Redis; ``--clients`` threads each send ``--batches`` batches of ``--batch-size`` traces
through :class:`~ace_workers.distributed.HttpProducer` per round, each with its Idempotency-Key.
A batch counts once intake answered 202: its traces are stored in the batch ledger and opened
for admission (no workers run: what is timed is intake, not learning). ``ACE_INTAKE_MAX_BACKLOG``
is 0 so the growing backlog is never refused. Figures: traces/s min, median and max over
``--rounds``.

Target: at least 1,000 traces/s in batches of 100.

    python benchmarks/intake.py [--rounds 5] [--batches 20] [--batch-size 100] [--clients 2]
        [--redis-url redis://127.0.0.1:6379/14]   (default: a private embedded Redis)
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import uvicorn
from bench_db import bench_redis

from ace_workers.distributed import HttpProducer
from ace_workers.distributed.service import build_service
from ace_workers.distributed.settings import WorkerSettings
from ace_workers.distributed.tenancy import ApiKeys, Tenant, TenantRegistry
from ace_workers.intake import build_intake_app
from ace_workers.sim import failure_traces

TARGET = 1000.0
PREFIX = "benchintake"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batches", type=int, default=20, help="batches per client per round")
    parser.add_argument("--batch-size", type=int, default=100)
    parser.add_argument("--clients", type=int, default=2)
    parser.add_argument("--redis-url", default=None)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    traces = failure_traces(args.batch_size)
    with bench_redis(args.redis_url) as redis_url:
        settings = WorkerSettings(redis_url=redis_url, queue_prefix=PREFIX, intake_max_backlog=0)
        service = build_service(settings, redis_url=redis_url)
        try:
            TenantRegistry(service.runtime.redis, prefix=PREFIX).add(Tenant("bench", prefixes=("bench-",)))
            _, secret = ApiKeys(service.runtime.redis, prefix=PREFIX).create("bench", "learn")
            app = build_intake_app(service, host="127.0.0.1")
            config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", access_log=False)
            server = uvicorn.Server(config)
            thread = threading.Thread(target=server.run, daemon=True)
            thread.start()
            while not server.started:
                time.sleep(0.01)
            port = server.servers[0].sockets[0].getsockname()[1]
            producer = HttpProducer(f"http://127.0.0.1:{port}", secret)

            def send(client: int) -> None:
                for _ in range(args.batches):
                    producer.enqueue_traces(traces, f"bench-{client}")

            send(0)  # warm-up: connections, the scripts loaded, the first skillbooks made
            rates = []
            with ThreadPoolExecutor(args.clients) as pool:
                for _ in range(args.rounds):
                    began = time.perf_counter()
                    list(pool.map(send, range(args.clients)))
                    elapsed = time.perf_counter() - began
                    rates.append(args.clients * args.batches * args.batch_size / elapsed)
            server.should_exit = True
            thread.join(timeout=15)
        finally:
            service.close()
    figures = {
        "batch_size": args.batch_size,
        "clients": args.clients,
        "traces_per_second": {
            "min": round(min(rates)),
            "median": round(statistics.median(rates)),
            "max": round(max(rates)),
        },
        "target": TARGET,
        "met": min(rates) >= TARGET,
    }
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
