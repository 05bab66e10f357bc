"""Two processes of several threads spend one budget through the shared limiter: at most one call over."""

from __future__ import annotations

import multiprocessing
import random
import threading
import time
from typing import Any

import redis

from ace_workers.distributed.tenancy import Budget, BudgetExhaustedError, Tenant
from ace_workers.distributed.tenancy.limiter import Limiter

BUDGET_TOKENS = 50_000
# A call is estimated at 100 tokens and really uses 40 to 100: an estimate counts the completion's
# max_tokens, which the reply cannot exceed.
ESTIMATE = 100
CALL_SECONDS = 0.01
PROCESSES = 2
THREADS = 6
TENANT = Tenant("acme", budgets=(Budget("*", tokens_per_day=BUDGET_TOKENS),))


def spend_until_refused(
    redis_url: str, seed: int, calls: multiprocessing.Queue[int], ready: Any, go: Any
) -> None:
    """One worker process: THREADS threads reserve, 'call' and settle until the budget refuses them."""
    client = redis.Redis.from_url(redis_url)
    limiter = Limiter(client, prefix="cc")
    limiter.release(limiter.acquire(Tenant("warmup"), "m", 1))  # connected, script loaded
    ready.put(True)
    go.wait()  # both processes start together, however long each took to start
    made = [0] * THREADS

    def thread(index: int) -> None:
        rng = random.Random(seed * 100 + index)
        while True:
            try:
                reservation = limiter.acquire(TENANT, "m", ESTIMATE)
            except BudgetExhaustedError:
                return
            time.sleep(CALL_SECONDS)  # the LLM call: reservations of every thread overlap
            limiter.settle(reservation, rng.randint(40, ESTIMATE), None)
            made[index] += 1

    threads = [threading.Thread(target=thread, args=(i,)) for i in range(THREADS)]
    for started in threads:
        started.start()
    for finished in threads:
        finished.join()
    client.close()
    calls.put(sum(made))


def test_two_processes_of_threads_never_overspend_a_budget_by_more_than_one_call(
    redis_client: redis.Redis, redis_url: str
) -> None:
    context = multiprocessing.get_context("spawn")
    calls: multiprocessing.Queue[int] = context.Queue()
    ready, go = context.Queue(), context.Event()
    workers = [
        context.Process(target=spend_until_refused, args=(redis_url, seed, calls, ready, go))
        for seed in range(PROCESSES)
    ]
    for worker in workers:
        worker.start()
    for _ in workers:
        ready.get(timeout=120)
    go.set()
    made = [calls.get(timeout=120) for _ in workers]
    for worker in workers:
        worker.join(timeout=30)
        assert worker.exitcode == 0
    usage = Limiter(redis_client, prefix="cc").usage("acme").window("*", "day")
    assert usage is not None
    assert usage.requests == sum(made) and all(count > 0 for count in made)  # both processes spent
    assert usage.tokens <= BUDGET_TOKENS + ESTIMATE
    # Refused only when the budget was nearly spent: by then the calls in flight held the rest.
    assert usage.tokens >= BUDGET_TOKENS - PROCESSES * THREADS * ESTIMATE
    assert usage.reserved_tokens == 0
