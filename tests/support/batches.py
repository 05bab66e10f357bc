"""Batches written straight into the ledger (no workers): a batch with the outcomes a test needs."""

from __future__ import annotations

import redis

from ace_workers.distributed.store.batches import BatchStore

__all__ = ["ledger", "ledger_batch"]


def ledger(client: redis.Redis, prefix: str) -> BatchStore:
    """The batch ledger under ``prefix``, its records kept an hour."""
    return BatchStore(client, prefix=prefix, ttl_seconds=3600)


def ledger_batch(
    client: redis.Redis,
    prefix: str,
    batch_id: str,
    *,
    done: int = 0,
    failed: int = 0,
    unfinished: int = 0,
    skillbook: str = "book",
) -> BatchStore:
    """Batch ``batch_id`` of ``done + failed + unfinished`` samples (one epoch): the first ``done``
    recorded done, the next ``failed`` failed (step Explode), the rest sent and not finished."""
    batches = ledger(client, prefix)
    total = done + failed + unfinished
    batches.create(
        batch_id, skillbook=skillbook, recipe="trace_analyser", per_epoch=total, epochs=1, skills_at_start=0
    )
    batches.store_items(batch_id, ({"question": f"q{index}"} for index in range(1, total + 1)))
    for index in range(1, total + 1):
        batches.record_sent(batch_id, 1, index)
    for index in range(1, done + 1):
        batches.record_done(batch_id, 1, index, {"answer": "a"})
    for index in range(done + 1, done + failed + 1):
        batches.record_failure(batch_id, 1, index, step="Explode", error="RuntimeError: boom")
    return batches
