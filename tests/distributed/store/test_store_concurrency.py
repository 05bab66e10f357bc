"""Concurrent writers on one skillbook: every operation applied exactly once, versions contiguous."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import redis
from redis.cluster import RedisCluster

from ace_workers.core import UpdateBatch, UpdateOperation
from ace_workers.distributed import RedisSkillbookStore, VersionConflict
from tests.support.fixtures import connect_test_redis, server_or_cluster
from tests.support.hooked_redis import HookedCluster, HookedRedis

HookedClients = Callable[[Callable[[], None]], Any]


@pytest.fixture
def hooked_clients(
    request: pytest.FixtureRequest, redis_url: str, redis_client: redis.Redis
) -> Iterator[HookedClients]:
    """Makes clients of the test Redis (or cluster) whose transactions call a hook before MULTI."""
    made: list[Any] = []

    def make(hook: Callable[[], None]) -> Any:
        if isinstance(redis_client, RedisCluster):
            node = redis_client.get_default_node()
            client: Any = HookedCluster(host=node.host, port=node.port)
        else:
            client = HookedRedis(connection_pool=connect_test_redis(redis_url).connection_pool)
        client.before_multi = hook
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()


def add(content: str) -> UpdateOperation:
    return UpdateOperation(type="ADD", section="lessons", content=content)


def test_eight_threads_apply_every_operation_exactly_once(redis_client: redis.Redis) -> None:
    # Eight writers back to back with no pause is far more contention than the single write queue
    # sees; optimistic CAS lets an unlucky writer lose many rounds in a row (up to ~20 seen on two
    # CPUs), so this test allows more attempts than the default 10. Losing writers retry, never vanish.
    store = RedisSkillbookStore(redis_client, "book", max_attempts=100)
    shared = store.apply(
        UpdateBatch(operations=[UpdateOperation(type="ADD", section="shared", content="Shared")])
    )
    shared_id = shared.report.added[0]
    threads, per_thread = 8, 25

    def writer(number: int) -> list[int]:
        versions = []
        for i in range(per_thread):
            work = UpdateBatch(
                operations=[
                    add(f"Lesson {i} of writer {number}"),
                    UpdateOperation(type="TAG", skill_id=shared_id, metadata={"helpful": 1}),
                ]
            )
            result = store.apply(work, idempotency_key=f"w{number}:{i}")
            assert result.report.added
            assert not result.report.skipped_ops
            versions.append(result.version)
        return versions

    with ThreadPoolExecutor(threads) as pool:
        versions = [v for vs in pool.map(writer, range(threads)) for v in vs]

    total = threads * per_thread
    assert sorted(versions) == list(range(2, total + 2))  # one version per batch, none shared
    _, book = store.snapshot()
    lessons = [s for s in book.skills() if s.section == "lessons"]
    assert len(lessons) == total
    assert len({s.id for s in lessons}) == total
    assert len({s.content for s in lessons}) == total
    assert book.get_skill(shared_id).helpful == total  # type: ignore[union-attr]
    assert [r.version for r in reversed(store.history(limit=total + 1))] == list(range(1, total + 2))
    stats = store.stats()
    assert stats["applies"] == total + 1
    assert stats["duplicate_deliveries"] == 0  # conflicts > 0 is fine


def test_a_writer_that_loses_the_race_retries_and_is_not_lost(
    redis_client: redis.Redis, hooked_clients: HookedClients
) -> None:
    rival = RedisSkillbookStore(redis_client, "race")
    interfered: list[int] = []

    def rival_commits_first() -> None:
        # Runs after our store read version 0 and planned "lessons-00001", before its MULTI.
        if not interfered:
            interfered.append(rival.apply(UpdateBatch(operations=[add("Rival lesson")])).version)

    store = RedisSkillbookStore(hooked_clients(rival_commits_first), "race")
    result = store.apply(UpdateBatch(operations=[add("Our lesson")]))
    assert interfered == [1]
    assert result.version == 2
    assert result.report.added == ["lessons-00002"]
    _, book = store.snapshot()
    assert {s.id: s.content for s in book.skills()} == {
        "lessons-00001": "Rival lesson",
        "lessons-00002": "Our lesson",
    }
    assert store.stats()["conflicts"] == 1


def test_of_n_writers_racing_on_one_version_exactly_one_wins(hooked_clients: HookedClients) -> None:
    writers = 5
    barrier = threading.Barrier(writers, timeout=10)

    def all_have_read() -> None:
        barrier.wait()  # every writer has read version 0; now all of them commit

    stores = [
        RedisSkillbookStore(hooked_clients(all_have_read), "race", max_attempts=1) for _ in range(writers)
    ]

    def attempt(number: int) -> int | VersionConflict:
        try:
            return stores[number].apply(UpdateBatch(operations=[add(f"Lesson of writer {number}")])).version
        except VersionConflict as conflict:
            return conflict

    with ThreadPoolExecutor(writers) as pool:
        outcomes = list(pool.map(attempt, range(writers)))

    wins = [o for o in outcomes if isinstance(o, int)]
    conflicts = [o for o in outcomes if isinstance(o, VersionConflict)]
    assert wins == [1]
    assert len(conflicts) == writers - 1
    assert all(c.attempts == 1 for c in conflicts)
    assert all(c.name == "race" for c in conflicts)
    assert stores[0].version() == 1
    assert len(stores[0].snapshot()[1]) == 1
    assert stores[0].stats()["conflicts"] == writers - 1


def test_racing_writers_with_retries_all_land(hooked_clients: HookedClients) -> None:
    writers = 5
    barrier = threading.Barrier(writers, timeout=10)
    first_attempt = threading.local()

    def race_once() -> None:
        # Every writer reads version 0 before any commits, on its first attempt only.
        if not getattr(first_attempt, "done", False):
            first_attempt.done = True
            barrier.wait()

    stores = [RedisSkillbookStore(hooked_clients(race_once), "race") for _ in range(writers)]
    with ThreadPoolExecutor(writers) as pool:
        results = list(
            pool.map(lambda n: stores[n].apply(UpdateBatch(operations=[add(f"Lesson {n}")])), range(writers))
        )
    assert sorted(r.version for r in results) == list(range(1, writers + 1))
    _, book = stores[0].snapshot()
    assert len(book) == writers
    assert len({s.id for s in book.skills()}) == writers
    assert stores[0].stats()["conflicts"] >= writers - 1


@pytest.fixture(params=["server", "cluster"])
def redis_client(request: pytest.FixtureRequest) -> Iterator[redis.Redis]:
    """The store's behaviour on one Redis and on Redis Cluster alike."""
    yield from server_or_cluster(request)
