"""A fresh process starts from the persisted compact snapshot, not a whole read; a corrupt one is rebuilt."""

from __future__ import annotations

import io
import logging
import random
import struct
import zipfile
from collections.abc import Callable

import pytest
import redis

from ace_workers.core import UpdateBatch
from ace_workers.distributed import RedisSkillbookStore, SnapshotCache
from ace_workers.distributed.store import backup
from ace_workers.distributed.store.compact_snapshots import CompactSnapshots
from tests.distributed.store.test_snapshot_refresh import no_full_reads, op, random_batch, same_as_full_read
from tests.support.servers import LocalCluster


def fresh_process(client: redis.Redis, name: str = "book") -> RedisSkillbookStore:
    """A store with a cache of its own: what a newly started worker has."""
    return RedisSkillbookStore(client, name, snapshot_cache=SnapshotCache())


def learn(store: RedisSkillbookStore, versions: int, seed: int = 3) -> None:
    rng = random.Random(seed)
    for step in range(versions):
        ids = [s.id for s in store.snapshot()[1].skills(include_invalid=True)]  # leaves the cache alone
        store.apply(random_batch(rng, ids, step))


def stored_version(client: redis.Redis, store: RedisSkillbookStore) -> int:
    return int(client.hget(store.keys.compact_snapshot, "version") or -1)


def test_a_fresh_process_loads_the_compact_snapshot_the_first_whole_read_wrote(
    redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = fresh_process(redis_client)
    learn(first, 20)
    first.cached_snapshot()  # read whole: writes the compact snapshot of this version
    assert stored_version(redis_client, first) == first.version()
    learn(first, 10, seed=4)  # versions the fresh process brings it forward through
    fresh = fresh_process(redis_client)
    full_reads = no_full_reads(fresh, monkeypatch)
    version, view = fresh.cached_snapshot()
    assert full_reads == []
    assert version == first.version()
    same_as_full_read(fresh, view)


def test_a_reader_far_ahead_of_the_compact_snapshot_writes_a_newer_one(redis_client: redis.Redis) -> None:
    store = fresh_process(redis_client)
    learn(store, 5)
    store.cached_snapshot()
    written = stored_version(redis_client, store)
    learn(store, 70, seed=5)  # beyond _COMPACT_REFRESH_VERSIONS
    fresh_process(redis_client).cached_snapshot()
    assert stored_version(redis_client, store) == store.version() > written


def test_an_older_snapshot_never_replaces_a_newer_one(redis_client: redis.Redis) -> None:
    store = fresh_process(redis_client)
    learn(store, 4)
    old_version, old = store.cached_snapshot()
    learn(store, 3, seed=6)
    fresh_process(redis_client).cached_snapshot()  # brought forward, not written: only 3 versions
    compact = CompactSnapshots(redis_client, store.keys)
    newer = store.version()
    compact.save(fresh_process(redis_client).snapshot()[1], newer, _incarnation(store))
    compact.save(old._sb, old_version, _incarnation(store))
    assert stored_version(redis_client, store) == newer


def torn(data: bytes) -> bytes:
    return data[: len(data) // 2]


def flipped_in_a_skill_block(data: bytes) -> bytes:
    at = member_start(data, "skill_blocks") + 140  # past the member's header: in the first block
    return data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1 :]


@pytest.mark.parametrize(
    ("corrupt", "named"),
    [(torn, None), (flipped_in_a_skill_block, "member 'skill_blocks'")],
    ids=["torn", "changed-inside-a-member"],
)
def test_a_corrupt_compact_snapshot_is_ignored_with_one_warning_naming_it_read_whole_and_written_again(
    redis_client: redis.Redis,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    corrupt: Callable[[bytes], bytes],
    named: str | None,
) -> None:
    store = fresh_process(redis_client)
    learn(store, 8)
    store.cached_snapshot()
    data = redis_client.hget(store.keys.compact_snapshot, "data")
    assert isinstance(data, bytes)
    redis_client.hset(store.keys.compact_snapshot, "data", corrupt(data))
    fresh = fresh_process(redis_client)
    full_reads = no_full_reads(fresh, monkeypatch)
    caplog.clear()  # the applies' own warnings (operations naming removed skills)
    with caplog.at_level(logging.WARNING):
        _, view = fresh.cached_snapshot()
    assert full_reads == [1]
    same_as_full_read(fresh, view)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert store.keys.compact_snapshot in warnings[0]
    assert named is None or named in warnings[0]
    assert redis_client.hget(store.keys.compact_snapshot, "data") == data  # rebuilt, the same value


def test_a_compact_snapshot_of_another_incarnation_is_never_served(
    redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = fresh_process(redis_client)
    learn(store, 6)
    store.cached_snapshot()
    old = redis_client.hgetall(store.keys.compact_snapshot)
    store.delete()
    assert not redis_client.exists(store.keys.compact_snapshot)  # deleted with the skillbook
    store.apply(UpdateBatch(operations=[op("ADD", section="math", content="A new start.")] * 1))
    learn(store, 6, seed=9)
    redis_client.hset(store.keys.compact_snapshot, mapping=old)  # put back by hand: an old value
    fresh = fresh_process(redis_client)
    full_reads = no_full_reads(fresh, monkeypatch)
    _, view = fresh.cached_snapshot()
    assert full_reads == [1]
    same_as_full_read(fresh, view)


def test_backups_leave_the_derived_compact_snapshot_out(redis_client: redis.Redis) -> None:
    store = fresh_process(redis_client)
    learn(store, 3)
    store.cached_snapshot()
    assert redis_client.exists(store.keys.compact_snapshot)
    assert store.keys.compact_snapshot not in backup._skillbook_keys(redis_client, store.keys)


def test_a_client_decoding_replies_reads_whole_and_stores_nothing(
    redis_client: redis.Redis, redis_url: str
) -> None:
    text_client = redis.Redis.from_url(redis_url, decode_responses=True)
    store = fresh_process(text_client)
    learn(store, 4)
    _, view = store.cached_snapshot()
    same_as_full_read(store, view)
    assert not redis_client.exists(store.keys.compact_snapshot)


def test_a_fresh_process_loads_the_compact_snapshot_on_a_redis_cluster(
    redis_cluster: LocalCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = redis_cluster.client()
    client.flushall()
    store = fresh_process(client)
    learn(store, 10)
    store.cached_snapshot()
    learn(store, 4, seed=8)
    fresh = fresh_process(client)
    full_reads = no_full_reads(fresh, monkeypatch)
    _, view = fresh.cached_snapshot()
    assert full_reads == []
    same_as_full_read(fresh, view)


def member_start(data: bytes, name: str) -> int:
    """Where member ``name``'s bytes start in a compact snapshot (a zip of stored members)."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        info = archive.getinfo(f"{name}.npy")
    name_length, extra_length = struct.unpack("<HH", data[info.header_offset + 26 : info.header_offset + 30])
    return info.header_offset + 30 + name_length + extra_length


def _incarnation(store: RedisSkillbookStore) -> str | None:
    return store.cached_snapshot_of_incarnation()[1]
