"""Beat's retention entry: a worker that takes it trims the records past their bounds."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
import redis

from ace_workers.core import UpdateBatch, UpdateOperation
from ace_workers.distributed import RedisSkillbookStore, WorkerSettings
from ace_workers.distributed.ops.nightly import retention_schedule
from ace_workers.distributed.service import Service, build_service, local_workers
from ace_workers.distributed.store.keys import dead_letters_key
from ace_workers.distributed.store.retention import RetentionPolicy
from ace_workers.distributed.worker.task_names import RETENTION_TASK
from tests.support.waiting import wait_for

KEEP_ALL = RetentionPolicy(dead_letter_days=0, proposal_days=0, audit_days=0, label_moves=0, evaluations=0)


@pytest.fixture
def service(redis_url: str, redis_client: redis.Redis) -> Iterator[Service]:
    """A fleet keeping 2 evaluations per skillbook and dead letters 30 days, its workers not started."""
    settings = WorkerSettings(
        redis_url=redis_url, queue_prefix=f"t{uuid.uuid4().hex[:8]}", retention_evaluations=2
    )
    built = build_service(settings, redis_url=redis_url)
    try:
        yield built
    finally:
        built.close()


def test_the_retention_entry_runs_on_the_nightly_schedule_on_the_execute_queue() -> None:
    settings = WorkerSettings(nightly_schedule="30 2 * * *")

    entry = retention_schedule(settings)["retention"]

    assert entry["task"] == RETENTION_TASK
    assert (entry["schedule"].minute, entry["schedule"].hour) == ({30}, {2})
    assert entry["options"]["queue"] == settings.queue_names()["execute"]


def test_a_worker_given_the_retention_entry_trims_past_the_bounds(
    service: Service, redis_client: redis.Redis
) -> None:
    prefix = service.runtime.settings.queue_prefix
    store = RedisSkillbookStore(redis_client, "book", prefix=prefix, retention=KEEP_ALL)
    store.apply(UpdateBatch(operations=[UpdateOperation(type="ADD", section="s", content="seed")]))
    for n in range(5):
        store.evaluations.record({"n": n})
    parked = (datetime.now(UTC) - timedelta(days=31)).isoformat()
    redis_client.rpush(dead_letters_key(prefix), json.dumps({"kwargs": {}, "parked_at": parked}))
    entry = retention_schedule(service.runtime.settings)["retention"]

    with local_workers(service):
        service.app.send_task(entry["task"], queue=entry["options"]["queue"])
        wait_for(lambda: redis_client.llen(store.keys.evaluations) == 2, 60, "the sweep of evaluations")
        wait_for(lambda: redis_client.llen(dead_letters_key(prefix)) == 0, 60, "the sweep of dead letters")

    assert [report["n"] for report in store.evaluations.recent()] == [4, 3]
