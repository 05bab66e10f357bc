"""What waiting for budget costs: parking a refused step, and releasing parked ones once the budget has room.

Parks N step messages for one tenant the way a worker does (its sample marked waiting in the
batch, its message parked per tenant), then releases them all (claimed one by one, each sent
as its chain from the deferred step to the broker; no worker takes them). Prints the time per
sample of each, p50 and p99 of the parking.

    python benchmarks/deferral.py [--samples 2000] [--redis-url redis://127.0.0.1:6379/14]

Without --redis-url an embedded Redis is started; with one, only database 14 is used (and flushed).
"""

from __future__ import annotations

import argparse
import statistics
import time
import uuid

from bench_db import bench_redis

from ace_workers.distributed.service import build_service
from ace_workers.distributed.settings import WorkerSettings
from ace_workers.distributed.tenancy.errors import BudgetExhaustedError
from ace_workers.distributed.tenancy.tenants import Budget, Tenant, TenantRegistry
from ace_workers.distributed.worker.deferrals import defer_step, release_deferred

TENANT = "bench"


def run(redis_url: str, samples: int) -> dict[str, float]:
    """Park ``samples`` refused steps and release them; the timings in milliseconds per sample."""
    prefix = f"b{uuid.uuid4().hex[:6]}"
    service = build_service(WorkerSettings(redis_url=redis_url, queue_prefix=prefix), redis_url=redis_url)
    try:
        runtime = service.runtime
        registry = TenantRegistry(runtime.redis, prefix=prefix)
        registry.add(Tenant(TENANT, budgets=(Budget(tokens_per_day=10),)))
        batch_id = uuid.uuid4().hex
        runtime.batches.create(
            batch_id,
            skillbook="bench",
            recipe="trace_analyser",
            per_epoch=samples,
            epochs=1,
            skills_at_start=0,
        )
        refused = BudgetExhaustedError(
            TENANT, "m", "tokens_per_day", spent=10, budget=10, resets_at=time.time() + 3600
        )
        parks = []
        for index in range(1, samples + 1):
            runtime.batches.record_sent(batch_id, 1, index)
            runtime.batches.record_progress(batch_id, 1, index, first_step=True)
            kwargs = {
                "recipe": "trace_analyser",
                "skillbook": "bench",
                "index": 2,
                "batch_id": batch_id,
                "epoch": 1,
                "sample_index": index,
            }
            started = time.perf_counter()
            defer_step(
                runtime, refused, task_id=None, step="UpdateStep", kwargs=kwargs, payload={"trace": {}}
            )
            parks.append((time.perf_counter() - started) * 1000)
        assert runtime.batches.status(batch_id).waiting_for_budget == samples
        registry.update(TENANT, lambda tenant: tenant.with_budget(Budget(tokens_per_day=10_000)))
        started = time.perf_counter()
        sent = release_deferred(service.dispatcher, TENANT)
        release = (time.perf_counter() - started) * 1000
        assert sent == samples, sent
        parks.sort()
        return {
            "park_p50_ms": statistics.median(parks),
            "park_p99_ms": parks[int(len(parks) * 0.99) - 1],
            "release_ms_per_sample": release / samples,
        }
    finally:
        service.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument("--redis-url", default=None)
    args = parser.parse_args()
    with bench_redis(args.redis_url) as url:
        figures = run(url, args.samples)
    print(f"{args.samples} samples: " + ", ".join(f"{name} {value:.3f}" for name, value in figures.items()))


if __name__ == "__main__":
    main()
