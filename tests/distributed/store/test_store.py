"""The Redis skillbook store against a real Redis: applies, idempotency, stale batches, names, snapshots."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from ace_workers.core import SimilarityDecision, Skillbook, SkillbookView, UpdateBatch
from ace_workers.distributed import (
    RedisSkillbookStore,
    SkillbookExistsError,
    SkillbookKeys,
    SnapshotCache,
    UnknownSkillbookError,
    list_skillbooks,
    registry_key,
    validate_skillbook_name,
)
from ace_workers.errors import InvalidUpdateError
from tests.support.fixtures import connect_test_redis, server_or_cluster
from tests.support.operations import add, batch, remove, tag, update

# --- apply ---------------------------------------------------------------------------------------


def test_a_new_skillbook_is_version_0_and_empty(store: RedisSkillbookStore) -> None:
    assert store.version() == 0
    assert not store.exists()
    version, book = store.snapshot()
    assert (version, len(book)) == (0, 0)
    assert store.history() == []


def test_apply_allocates_ids_bumps_the_version_and_records_the_change(store: RedisSkillbookStore) -> None:
    source = {"sample_id": "s1", "epoch": 1}
    result = store.apply(
        batch(add("Check units.", "math"), add("Read twice", "reading", insight_source={"sample": 1})),
        idempotency_key="b1:s1:1:apply",
        source=source,
    )
    assert (result.version, result.duplicate_delivery, result.stale) == (1, False, False)
    assert result.report.added == ["math-00001", "reading-00002"]
    version, book = store.snapshot()
    assert version == 1
    assert store.exists()
    assert [s.id for s in book.skills()] == ["math-00001", "reading-00002"]
    [origin] = book.get_skill("reading-00002").occurrences  # type: ignore[union-attr]
    assert (origin["operation_type"], origin["sample"]) == ("ADD", 1)
    [record] = store.history()
    assert (record.version, record.base_version, record.idempotency_key) == (1, None, "b1:s1:1:apply")
    assert record.source == source
    assert [op.content for op in record.operations] == ["Check units.", "Read twice"]
    assert record.before == {"math-00001": None, "reading-00002": None}
    assert record.after["math-00001"]["content"] == "Check units."  # type: ignore[index]
    assert store.stats()["applies"] == 1


def test_an_add_restating_a_skill_of_its_section_is_skipped(store: RedisSkillbookStore) -> None:
    store.apply(batch(add("Check units.", "math")))
    result = store.apply(batch(add("  check   UNITS ", "math"), add("Check units.", "physics")))
    assert result.report.duplicates == [(0, "math-00001")]
    assert result.report.added == ["physics-00002"]
    assert store.stats()["skipped_ops"] == 1


def test_an_apply_reads_on_a_server_that_lost_its_scripts(
    store: RedisSkillbookStore, redis_client: redis.Redis
) -> None:
    """An apply reads what it plans with in one script (one server: apply_reads.lua); a server that
    forgot its scripts (restarted, SCRIPT FLUSH) is given it again, and the apply goes through."""
    first = store.apply(batch(add("Check the units")))
    redis_client.script_flush()
    second = store.apply(batch(add("Check the units"), add("Carry the one")))

    assert (first.version, second.version) == (1, 2)
    assert second.report.added and len(second.report.duplicates) == 1  # the index field was read


def test_update_tag_remove_follow_the_core_semantics(store: RedisSkillbookStore) -> None:
    store.apply(batch(add("Check units.", "math"), add("Estimate first", "math")))
    store.apply(
        batch(tag("math-00001", helpful=2, harmful=1), update("math-00002", "Estimate, then compute"))
    )
    _, book = store.snapshot()
    first, second = book.get_skill("math-00001"), book.get_skill("math-00002")
    assert first is not None
    assert (first.helpful, first.harmful) == (2, 1)
    assert second is not None
    assert second.content == "Estimate, then compute"
    assert second.embedding is None
    store.apply(batch(remove("math-00001")))
    assert "math-00001" not in store.snapshot()[1]
    # The removed skill's content is free again; the updated skill's old content too.
    result = store.apply(batch(add("Check units.", "math"), add("Estimate first", "math")))
    assert result.report.added == ["math-00003", "math-00004"]


def test_an_llm_chosen_id_that_exists_or_is_invalid_gets_a_fresh_one(store: RedisSkillbookStore) -> None:
    store.apply(batch(add("Check units.", "math")))
    result = store.apply(
        batch(
            add("Estimate first", "math", skill_id="math-00001"),
            add("Draw a diagram", "math", skill_id="Not An Id"),
            add("Name the unknowns", "math", skill_id="math-00040"),
            add("Check the sign", "math"),
        )
    )
    assert result.report.added == ["math-00002", "math-00003", "math-00040", "math-00041"]


def test_an_invalid_batch_changes_nothing_in_redis(
    store: RedisSkillbookStore, redis_client: redis.Redis
) -> None:
    store.apply(batch(add("Check units.", "math")))
    keys_before = sorted(redis_client.keys("*"))
    with pytest.raises(InvalidUpdateError) as caught:
        store.apply(batch(add("Fine", "math"), tag("math-00001", helpful=1), add("No section", "")))
    assert caught.value.index == 2
    assert store.version() == 1
    assert [r.version for r in store.history()] == [1]
    assert sorted(redis_client.keys("*")) == keys_before
    assert store.stats()["applies"] == 1


def test_an_invalid_batch_on_a_new_skillbook_creates_no_key(
    store: RedisSkillbookStore, redis_client: redis.Redis
) -> None:
    with pytest.raises(InvalidUpdateError):
        store.apply(batch(add("", "math")))
    assert redis_client.keys("*") == []


def test_an_empty_batch_makes_no_version(store: RedisSkillbookStore) -> None:
    store.apply(batch(add("Check units.")))
    result = store.apply(UpdateBatch(), base_version=0)
    assert (result.version, result.stale, result.report.added) == (1, True, [])
    assert store.version() == 1


def test_source_must_be_json(store: RedisSkillbookStore) -> None:
    with pytest.raises(TypeError, match="source"):
        store.apply(batch(add("Check units.")), source={"when": object()})
    assert store.version() == 0


# --- idempotency -----------------------------------------------------------------------------------


def test_the_same_batch_with_the_same_key_changes_the_skillbook_once(store: RedisSkillbookStore) -> None:
    store.apply(batch(add("Shared", "general")))
    work = batch(add("Check units.", "math"), tag("general-00001", helpful=1))
    first = store.apply(work, idempotency_key="batch-7:sample-3:epoch-1:apply", base_version=1)
    second = store.apply(work, idempotency_key="batch-7:sample-3:epoch-1:apply", base_version=1)
    assert (first.duplicate_delivery, second.duplicate_delivery) == (False, True)
    assert second.version == first.version == 2
    assert second.report == first.report
    assert store.version() == 2
    _, book = store.snapshot()
    assert len(book) == 2  # type: ignore[union-attr]
    assert book.get_skill("general-00001").helpful == 1  # type: ignore[union-attr]
    assert store.stats()["duplicate_deliveries"] == 1
    assert store.stats()["applies"] == 2
    # A different key is a different write.
    assert store.apply(work, idempotency_key="batch-7:sample-4:epoch-1:apply").version == 3


def test_idempotency_keys_expire_after_their_retention(
    redis_client: redis.Redis,
) -> None:
    store = RedisSkillbookStore(redis_client, "ttl", idempotency_ttl=3600)
    store.apply(batch(tag("nothing-00001", helpful=1)), idempotency_key="k")
    key = store.keys.idempotency("k")
    assert 0 < redis_client.ttl(key) <= 3600
    redis_client.pexpire(key, 1)  # as if the retention had passed
    while redis_client.exists(key):
        pass
    assert not store.apply(batch(tag("nothing-00001", helpful=1)), idempotency_key="k").duplicate_delivery


def test_an_empty_idempotency_key_is_refused(store: RedisSkillbookStore) -> None:
    with pytest.raises(ValueError, match="idempotency_key"):
        store.apply(batch(add("Check units.")), idempotency_key="")


# --- stale applies ---------------------------------------------------------------------------------


def test_a_batch_computed_on_an_old_version_is_rebased_and_counted(
    store: RedisSkillbookStore, caplog: pytest.LogCaptureFixture
) -> None:
    store.apply(batch(add("Check units.", "math"), add("Estimate first", "math")))  # version 1
    base, _ = store.snapshot()
    store.apply(batch(remove("math-00002")))  # version 2, meanwhile
    with caplog.at_level(logging.WARNING):
        result = store.apply(
            batch(update("math-00002", "Estimate, always"), add("check units", "math"), add("New", "math")),
            base_version=base,
        )
    assert result.stale
    assert result.report.skipped == [(0, "UPDATE", "math-00002")]
    assert result.report.duplicates == [(1, "math-00001")]
    assert result.report.added == ["math-00003"]
    assert "math-00002" in caplog.text
    assert "skipped UPDATE" in caplog.text
    stats = store.stats()
    assert (stats["stale_applies"], stats["skipped_ops"]) == (1, 2)
    assert not store.apply(batch(tag("math-00001", helpful=1)), base_version=store.version()).stale


# --- names and keys --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["a}:b", "x{y", "", "a" * 200, "has space", "a:b", "-lead", "line\n", None])
def test_names_that_could_break_a_key_are_rejected(name: Any) -> None:
    with pytest.raises(ValueError, match="invalid skillbook name"):
        validate_skillbook_name(name)
    with pytest.raises(ValueError, match="invalid skillbook name"):
        SkillbookKeys(name)


@pytest.mark.parametrize("name", ["a", "tenant-1.agent_2", "A" * 128])
def test_plain_names_are_accepted(name: str) -> None:
    assert validate_skillbook_name(name) == name


def test_every_key_of_a_skillbook_shares_one_hash_tag(
    store: RedisSkillbookStore, redis_client: redis.Redis
) -> None:
    store.apply(batch(add("Check units.")), idempotency_key="key:with{braces}")
    store.set_similarity_decision("general-00001", "general-00002", SimilarityDecision("KEEP"))
    keys = [k.decode() if isinstance(k, bytes) else k for k in redis_client.keys("*")]
    own = [k for k in keys if k != registry_key()]
    assert len(own) >= 8
    assert all(k.startswith("ace:{sb:book}:") for k in own)
    # Redis Cluster hashes the first {...}: the same slot for every key of the skillbook.
    assert {k[k.index("{") : k.index("}") + 1] for k in own} == {"{sb:book}"}
    # delete() removes fixed() and the idempotency keys: every key written is one of them.
    assert {k for k in own if ":idem:" not in k} <= set(store.keys.fixed())
    assert all(k.startswith("ace:{sb:book}:") for k in store.keys.fixed())


def test_two_skillbooks_in_one_redis_are_independent(redis_client: redis.Redis) -> None:
    first = RedisSkillbookStore(redis_client, "tenant-a")
    second = RedisSkillbookStore(redis_client, "tenant-b")
    first.apply(batch(add("Check units.", "math")), idempotency_key="same")
    second.apply(batch(add("Check units.", "math")), idempotency_key="same")  # not a duplicate here
    second.apply(batch(add("Estimate first", "math")))
    assert (first.version(), second.version()) == (1, 2)
    assert [s.id for s in first.snapshot()[1].skills()] == ["math-00001"]
    assert [s.id for s in second.snapshot()[1].skills()] == ["math-00001", "math-00002"]
    assert list_skillbooks(redis_client) == ["tenant-a", "tenant-b"]
    assert first.delete()
    assert list_skillbooks(redis_client) == ["tenant-b"]
    assert second.version() == 2
    assert not first.exists()


def test_a_prefix_separates_deployments(redis_client: redis.Redis) -> None:
    RedisSkillbookStore(redis_client, "book", prefix="staging").apply(batch(add("Check units.")))
    assert list_skillbooks(redis_client) == []
    assert list_skillbooks(redis_client, prefix="staging") == ["book"]
    with pytest.raises(ValueError, match="prefix"):
        RedisSkillbookStore(redis_client, "book", prefix="{bad}")


# --- snapshots, decisions, import/export -----------------------------------------------------------


def test_keep_decisions_persist_in_redis_and_appear_in_snapshots(
    store: RedisSkillbookStore, redis_client: redis.Redis
) -> None:
    store.apply(batch(add("Check units.", "math"), add("Check the units", "math")))
    version = store.set_similarity_decision(
        "math-00002", "math-00001", SimilarityDecision("KEEP", "distinct")
    )
    assert version == 2
    again = RedisSkillbookStore(redis_client, "book")  # another process, say
    _, book = again.snapshot()
    assert book.has_keep_decision("math-00001", "math-00002")
    assert again.similarity_decisions()[("math-00001", "math-00002")].reasoning == "distinct"
    assert store.history(limit=1)[0].kind == "decision"


def test_the_snapshot_cache_reuses_a_version_and_refreshes_after_a_write(
    redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = SnapshotCache(maxsize=4)
    store = RedisSkillbookStore(redis_client, "book", snapshot_cache=cache)
    store.apply(batch(add("Check units.")))
    whole_reads = []
    read_whole = store._read_whole_for_cache
    monkeypatch.setattr(store, "_read_whole_for_cache", lambda: whole_reads.append(1) or read_whole())
    version, first = store.cached_snapshot()
    again_version, again = store.cached_snapshot()
    assert version == again_version == 1
    assert len(whole_reads) == 1  # the second call found the version in the cache
    assert again.to_dict() == first.to_dict()
    assert isinstance(first, SkillbookView)  # shared, so handed out without write methods
    store.apply(batch(add("Estimate first")))
    newer_version, newer = store.cached_snapshot()
    assert newer_version == 2
    assert len(newer) == 2
    assert len(first) == 1  # the older snapshot is unchanged
    # A fresh snapshot() is the caller's own, mutable copy.
    _, own = store.snapshot()
    own.add_skill("general", "Local only")
    assert len(store.cached_snapshot()[1]) == 2


def test_a_recreated_skillbook_never_hits_the_old_cache(redis_client: redis.Redis) -> None:
    cache = SnapshotCache()
    store = RedisSkillbookStore(redis_client, "book", snapshot_cache=cache)
    store.apply(batch(add("Old skill")))
    _, old = store.cached_snapshot()
    store.delete()
    store.apply(batch(add("New skill")))  # version 1 again
    version, new = store.cached_snapshot()
    assert version == 1
    assert new is not old
    assert [s.content for s in new.skills()] == ["New skill"]


def test_import_and_export_round_trip_a_file_skillbook(store: RedisSkillbookStore, tmp_path: Any) -> None:
    book = Skillbook()
    book.add_skill("math", "Check units.")
    book.add_skill("math", "Old idea")
    book.add_skill("reading", "Read twice", skill_id="reading-00007")
    book.remove_skill("math-00002", soft=True)
    book.set_similarity_decision("math-00001", "reading-00007", SimilarityDecision("KEEP"))
    path = tmp_path / "skillbook.json"
    book.save_to_file(path)
    assert store.import_skillbook(Skillbook.load_from_file(path)) == 1
    exported = store.export()
    assert exported.to_dict() == book.to_dict()
    # The next id continues after the file's, and the soft-removed skill is not a duplicate target.
    result = store.apply(batch(add("Old idea", "math"), add("Check units", "math")))
    assert result.report.added == ["math-00008"]
    assert result.report.duplicates == [(1, "math-00001")]
    with pytest.raises(SkillbookExistsError):
        store.import_skillbook(book)
    assert store.import_skillbook(book, replace=True) == 3
    assert store.export().to_dict()["skills"] == book.to_dict()["skills"]
    assert store.snapshot()[1].to_dict()["next_id"] == 8  # ids are never issued twice


def test_export_of_an_unknown_skillbook_is_a_clear_error(redis_client: redis.Redis) -> None:
    with pytest.raises(UnknownSkillbookError, match="no skillbook named 'missing'"):
        RedisSkillbookStore(redis_client, "missing").export()
    assert not RedisSkillbookStore(redis_client, "missing").delete()


def test_a_client_that_decodes_responses_works_the_same(redis_url: str, redis_client: redis.Redis) -> None:
    client = connect_test_redis(redis_url, decode_responses=True)
    try:
        store = RedisSkillbookStore(client, "decoded", snapshot_cache=SnapshotCache())
        store.apply(batch(add("Check units.", "math")), idempotency_key="k", source={"s": 1})
        assert store.apply(batch(add("Check units.", "math")), idempotency_key="k").duplicate_delivery
        store.set_similarity_decision("a-00001", "b-00002", SimilarityDecision("KEEP"))
        assert store.cached_snapshot()[1].has_keep_decision("a-00001", "b-00002")
        assert store.history()[1].source == {"s": 1}
        assert store.diff(0, 2)["math-00001"][0] is None
        assert store.rollback(0) == 3
        assert len(store.snapshot()[1]) == 0
        assert store.stats()["duplicate_deliveries"] == 1
        assert list_skillbooks(client) == ["decoded"]
    finally:
        client.close()


@pytest.fixture(params=["server", "cluster"])
def redis_client(request: pytest.FixtureRequest) -> Iterator[redis.Redis]:
    """The store's behaviour on one Redis and on Redis Cluster alike."""
    yield from server_or_cluster(request)
