"""The store on a real Redis Cluster (ACE_STORE_URL=redis+cluster://...), the broker on the test Redis."""

from __future__ import annotations

import uuid

import pytest
import redis

from ace_workers.distributed.errors import InvalidSettingError
from ace_workers.distributed.service import build_service, local_workers
from ace_workers.distributed.settings import WorkerSettings
from ace_workers.distributed.store.keys import SkillbookKeys, batch_key
from ace_workers.sim import failure_traces
from tests.support.recipes import TEST_RECIPES
from tests.support.servers import LocalCluster

TIMEOUT = 90


def slot_of(cluster_client: redis.Redis, key: str) -> int:
    return int(cluster_client.cluster_keyslot(key))  # type: ignore[attr-defined]


def test_a_batch_learns_through_workers_with_the_store_on_a_redis_cluster(
    redis_client: redis.Redis, redis_url: str, redis_cluster: LocalCluster
) -> None:
    cluster = redis_cluster.client()
    cluster.flushall()
    prefix = f"t{uuid.uuid4().hex[:8]}"
    settings = WorkerSettings(
        redis_url=redis_url,
        store_url=redis_cluster.url,
        queue_prefix=prefix,
        sim_trust_threshold=0,
        recipes=TEST_RECIPES,
    )
    service = build_service(settings, redis_url=redis_url)
    books = ["support", "billing", "search"]
    try:
        assert type(service.runtime.redis).__name__ == "RedisCluster"
        with local_workers(service):
            handles = {
                book: service.producer.enqueue_traces(failure_traces(6, topics=3), book) for book in books
            }
            for book, handle in handles.items():
                status = handle.wait(timeout=TIMEOUT)
                assert (status.done, status.failed) == (6, 0), book
        for book in books:
            assert len(service.runtime.store(book).export()) == 3, book
        # The skillbooks and the batch ledger live on the cluster, spread over its slots ...
        slots = {slot_of(cluster, SkillbookKeys(book, prefix).version) for book in books}
        assert len(slots) == 3
        assert all(cluster.exists(batch_key(prefix, handle.batch_id)) for handle in handles.values())
        # ... and nothing of them on the broker's Redis.
        assert not list(redis_client.scan_iter(match=f"{prefix}:{{sb:*"))
        assert not list(redis_client.scan_iter(match=f"{prefix}:{{batch:*"))
    finally:
        service.close()
        cluster.flushall()
        cluster.close()


def test_a_store_url_of_another_kind_is_refused_and_never_shown() -> None:
    with pytest.raises(InvalidSettingError, match=r"ACE_STORE_URL.*unsupported scheme 'http'"):
        WorkerSettings(store_url="http://:secret@host:1/")
    assert "secret" not in repr(WorkerSettings(store_url="redis+cluster://:secret@host:7000"))
