"""A cached snapshot is brought forward through the change log, and equals a full read every time."""

from __future__ import annotations

import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import redis

from ace_workers.core import PromptBudget, Skillbook, SkillbookView, UpdateBatch, UpdateOperation
from ace_workers.distributed import RedisSkillbookStore, SnapshotCache
from ace_workers.distributed.store.keys import META_INCARNATION
from tests.support.provenance import without_provenance

BUDGET = PromptBudget(max_skills=3, max_chars=400)


def op(type_: str, **fields: Any) -> UpdateOperation:
    return UpdateOperation(type=type_, **fields)


def same_as_full_read(store: RedisSkillbookStore, book: Skillbook | SkillbookView) -> None:
    _, full = store.snapshot()
    # Cached snapshots leave provenance out (workers serve and decide on skills, not their history).
    assert without_provenance(book.to_dict()) == without_provenance(full.to_dict())
    assert all(not s.occurrences for s in book.skills(include_invalid=True))
    # Dict order is the prompt's order: the cheap path must keep it exactly.
    assert [s.id for s in book.skills(include_invalid=True)] == [
        s.id for s in full.skills(include_invalid=True)
    ]
    assert book.as_prompt() == full.as_prompt()
    # A budgeted table comes from the snapshot's prompt index, derived version by version.
    for query in ("", "skill updated units", "nothing shared"):
        assert book.as_prompt(BUDGET, query) == full.as_prompt(BUDGET, query)
    assert book.stats() == full.stats()


def no_full_reads(store: RedisSkillbookStore, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the full reads cached_snapshot makes from now on (snapshot() reads whole by design)."""
    calls: list[int] = []
    original = store._read_whole_for_cache

    def counting() -> Any:
        calls.append(1)
        return original()

    monkeypatch.setattr(store, "_read_whole_for_cache", counting)
    return calls


def random_batch(rng: random.Random, ids: list[str], step: int) -> UpdateBatch:
    ops = []
    for _ in range(rng.randint(1, 4)):
        kind = rng.choice(["ADD", "ADD", "TAG", "UPDATE", "REMOVE"]) if ids else "ADD"
        if kind == "ADD":
            section = rng.choice(["math", "reading", "general"])
            custom = {"skill_id": f"{section}-{90000 + step}"} if rng.random() < 0.1 else {}
            ops.append(op("ADD", section=section, content=f"skill {step}-{len(ops)}", **custom))
        elif kind == "TAG":
            ops.append(op("TAG", skill_id=rng.choice(ids), metadata={"helpful": 1}))
        elif kind == "UPDATE":
            ops.append(op("UPDATE", skill_id=rng.choice(ids), content=f"updated at {step}"))
        else:
            ops.append(op("REMOVE", skill_id=rng.choice(ids)))
    return UpdateBatch(operations=ops)


def test_refresh_after_applies_reads_only_the_log_and_matches_a_full_read(
    redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = RedisSkillbookStore(redis_client, "book", snapshot_cache=SnapshotCache())
    store.apply(UpdateBatch(operations=[op("ADD", section="math", content="Check units.")]))
    store.cached_snapshot()  # the starting point, read whole
    full_reads = no_full_reads(store, monkeypatch)
    rng = random.Random(7)
    for step in range(60):
        ids = [s.id for s in store.cached_snapshot()[1].skills()]
        store.apply(random_batch(rng, ids, step))
        if step % 3 == 0:  # also bring it forward across several versions at once
            version, book = store.cached_snapshot()
            assert version == store.version()
            same_as_full_read(store, book)
    assert full_reads == []


def test_rollbacks_and_trimmed_logs_fall_back_to_a_full_read(
    redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = RedisSkillbookStore(redis_client, "book", snapshot_cache=SnapshotCache(), changelog_maxlen=1)
    for n in range(3):
        store.apply(UpdateBatch(operations=[op("ADD", section="math", content=f"skill {n}")]))
    store.cached_snapshot()
    full_reads = no_full_reads(store, monkeypatch)
    store.rollback(1)
    version, book = store.cached_snapshot()
    assert full_reads == [1]
    assert version == 4
    same_as_full_read(store, book)
    # The log keeps about one entry: a snapshot several versions behind cannot be brought forward.
    for n in range(200):
        store.apply(UpdateBatch(operations=[op("ADD", section="math", content=f"more {n}")]))
    version, book = store.cached_snapshot()
    assert full_reads == [1, 1]
    assert version == store.version()
    same_as_full_read(store, book)


def test_threads_that_miss_the_same_version_read_it_once_between_them(
    redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = RedisSkillbookStore(redis_client, "book", snapshot_cache=SnapshotCache())
    store.apply(UpdateBatch(operations=[op("ADD", section="math", content=f"skill {n}") for n in range(50)]))
    reads: list[int] = []
    original = store._read_whole_for_cache

    def slow_read() -> Any:
        reads.append(1)
        time.sleep(0.2)  # long enough for every thread to miss the cache meanwhile
        return original()

    monkeypatch.setattr(store, "_read_whole_for_cache", slow_read)
    start = threading.Barrier(8)

    def read() -> int:
        start.wait()
        return id(store.cached_snapshot()[1]._sb)

    with ThreadPoolExecutor(8) as pool:
        books = set(pool.map(lambda _: read(), range(8)))
    assert reads == [1]
    assert len(books) == 1  # every thread got the one snapshot


def test_a_reader_whose_version_another_thread_already_passed_reads_no_whole_skillbook(
    redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = RedisSkillbookStore(redis_client, "book", snapshot_cache=SnapshotCache())
    store.apply(UpdateBatch(operations=[op("ADD", section="math", content="skill 0")]))
    store.cached_snapshot()
    for n in range(1, 4):
        store.apply(UpdateBatch(operations=[op("ADD", section="math", content=f"skill {n}")]))
    store.cached_snapshot()  # the newest cached is now version 4
    full_reads = no_full_reads(store, monkeypatch)
    # A reader that saw version 2 (then waited) finds the cache already past it.
    incarnation = redis_client.hget(store.keys.meta, META_INCARNATION).decode()
    base = store._cache.newest(store._identity(incarnation))
    assert base is not None
    assert base[0] == 4
    advanced = store._advance_cached(incarnation, 2)
    assert advanced is not None
    assert advanced[0] == 4
    assert advanced[1] is base[1]  # nothing written since: the same snapshot, not a copy
    assert full_reads == []


def test_the_cache_keeps_only_the_newest_versions_of_each_skillbook() -> None:
    cache = SnapshotCache(maxsize=16, versions_per_skillbook=2)
    books = {version: Skillbook() for version in range(1, 6)}
    for version, book in books.items():
        cache.put(("a", version), book, identity="a", version=version)
    other = Skillbook()
    cache.put(("b", 1), other, identity="b", version=1)
    # Older versions of "a" made room; "b" and the two newest of "a" stay.
    assert [cache.get(("a", version)) for version in range(1, 6)] == [None, None, None, books[4], books[5]]
    assert cache.get(("b", 1)) is other
    newest = cache.newest("a")
    assert newest is not None
    assert newest[0] == 5
    # A late put of an older version does not push the newest out.
    cache.put(("a", 3), books[3], identity="a", version=3)
    assert cache.get(("a", 5)) is books[5]
    assert cache.get(("a", 4)) is books[4]
