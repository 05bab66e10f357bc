"""``ace_batches{skillbook, state}``: the running and recent batches by the state ``status`` names."""

from __future__ import annotations

import redis
from prometheus_client import CollectorRegistry

from ace_workers.distributed.worker.ledger_metrics import BATCH_STATES, LedgerCollector
from tests.support.batches import ledger, ledger_batch

PREFIX = "gauge"


def batches_by_state(registry: CollectorRegistry, skillbook: str) -> dict[str, float]:
    return {
        state: registry.get_sample_value("ace_batches", {"skillbook": skillbook, "state": state}) or 0
        for state in BATCH_STATES
    }


def test_a_batch_whose_every_sample_failed_is_counted_failed_not_done(redis_client: redis.Redis) -> None:
    ledger_batch(redis_client, PREFIX, "all-failed", failed=3)
    ledger_batch(redis_client, PREFIX, "some-failed", done=2, failed=1)
    ledger_batch(redis_client, PREFIX, "all-done", done=3)
    ledger_batch(redis_client, PREFIX, "going", done=1, unfinished=2)
    registry = CollectorRegistry()
    registry.register(LedgerCollector(ledger(redis_client, PREFIX)))
    assert batches_by_state(registry, "book") == {
        "running": 1,
        "done": 1,
        "done_with_failures": 1,
        "failed": 1,
        "cancelled": 0,
    }
