"""Deduplication through the Redis skillbook: consolidation as one versioned, idempotent transaction."""

from __future__ import annotations

import numpy as np
import pytest
import redis

from ace_workers.core import (
    DeleteOp,
    KeepOp,
    MergeOp,
    SimilarityDecision,
    Skillbook,
    UpdateOp,
    WritableSkillbook,
)
from ace_workers.core.consolidation import ConsolidationBatch
from ace_workers.dedup import (
    DeduplicationConfig,
    DeduplicationManager,
    InMemoryEmbeddingCache,
    SimilarityDetector,
)
from ace_workers.distributed import RedisSkillbookStore, SkillbookFullError, SnapshotCache
from ace_workers.distributed.store.backed_skillbook import StoreBackedSkillbook
from ace_workers.distributed.store.changelog import ChangeKind
from ace_workers.distributed.store.embedding_cache import RedisEmbeddingCache
from ace_workers.errors import InvalidConsolidationError
from tests.support.operations import add, batch, tag, update
from tests.support.provenance import without_provenance


def seeded(store: RedisSkillbookStore) -> list[str]:
    """Four skills in "units" (two near-duplicates with votes), one in "other"."""
    result = store.apply(
        batch(
            add("Convert units before adding.", "units"),
            add("Convert all units before you add.", "units"),
            add("Round to two decimals.", "units"),
            add("State the unit of the answer.", "units"),
            add("Cite sources.", "other"),
        )
    )
    first, second = result.report.added[:2]
    store.apply(batch(tag(first, helpful=3, harmful=1), tag(second, helpful=2, neutral=4)))
    return result.report.added


def consolidation(*operations: object) -> ConsolidationBatch:
    return ConsolidationBatch(operations=list(operations))  # type: ignore[arg-type]


def test_a_merge_adds_the_counters_soft_deletes_the_others_and_is_one_version(
    store: RedisSkillbookStore,
) -> None:
    first, second, *_ = seeded(store)
    before = store.version()
    result = store.apply_consolidation(
        consolidation(MergeOp(keep_id=first, merge_ids=[second], merged_content="Convert every unit first."))
    )
    assert (result.version, result.report.merged) == (before + 1, {first: [second]})
    _, book = store.snapshot()
    kept, merged = book.get_skill(first), book.get_skill(second)
    assert kept is not None
    assert merged is not None
    assert (kept.helpful, kept.harmful, kept.neutral) == (5, 1, 4)
    assert kept.content == "Convert every unit first."
    assert merged.status == "invalid"
    record = store.history(limit=1)[0]
    assert record.kind is ChangeKind.CONSOLIDATE
    assert record.consolidation[0]["type"] == "MERGE"
    # The merged-away text left the content index: restating it is a new skill again.
    again = store.apply(batch(add("Convert all units before you add.", "units")))
    assert again.report.added
    assert not again.report.duplicates


def test_a_batch_naming_an_unknown_or_deleted_skill_is_rejected_whole(store: RedisSkillbookStore) -> None:
    first, second, third, *_ = seeded(store)
    store.apply_consolidation(consolidation(DeleteOp(skill_id=third)))
    version, before = store.snapshot()
    for bad in (
        consolidation(MergeOp(keep_id=first, merge_ids=[second]), DeleteOp(skill_id="units-09999")),
        consolidation(UpdateOp(skill_id=first, new_content="x"), MergeOp(keep_id=second, merge_ids=[third])),
    ):
        with pytest.raises(InvalidConsolidationError, match=r"units-09999|already deleted"):
            store.apply_consolidation(bad)
    after_version, after = store.snapshot()
    assert after_version == version
    assert after.to_dict() == before.to_dict()


def test_keep_decisions_are_stored_with_the_skillbook_and_survive_export_and_reload(
    store: RedisSkillbookStore, redis_client: redis.Redis, tmp_path: object
) -> None:
    first, second, *_ = seeded(store)
    store.apply_consolidation(consolidation(KeepOp(skill_ids=[first, second], similarity=0.9, reasoning="r")))
    fresh = RedisSkillbookStore(redis_client, "book", snapshot_cache=SnapshotCache())
    assert fresh.export().has_keep_decision(first, second)
    path = f"{tmp_path}/book.json"
    fresh.export().save_to_file(path)
    assert Skillbook.load_from_file(path).has_keep_decision(second, first)


def test_the_same_consolidation_delivered_twice_changes_the_skillbook_once(
    store: RedisSkillbookStore,
) -> None:
    first, second, *_ = seeded(store)
    op = consolidation(MergeOp(keep_id=first, merge_ids=[second]))
    applied = store.apply_consolidation(op, idempotency_key="b:e1:3:4:w0")
    again = store.apply_consolidation(op, idempotency_key="b:e1:3:4:w0")
    assert again.duplicate_delivery
    assert not applied.duplicate_delivery
    assert (again.version, again.report.merged) == (applied.version, {first: [second]})
    assert store.version() == applied.version
    kept = store.export().get_skill(first)
    assert kept is not None
    assert kept.helpful == 5


def test_a_consolidation_rolls_back_like_any_version(store: RedisSkillbookStore) -> None:
    first, second, *_ = seeded(store)
    version = store.version()
    store.apply_consolidation(consolidation(MergeOp(keep_id=first, merge_ids=[second])))
    store.rollback(version)
    book = store.export()
    restored, kept = book.get_skill(second), book.get_skill(first)
    assert restored is not None
    assert restored.status == "active"
    assert kept is not None
    assert kept.helpful == 3


KEYWORDS = ("onvert", "Round", "unit of the answer", "Cite")


def keyword_embed(texts: list[str]) -> np.ndarray:
    """Deterministic vectors: one direction per keyword, so only the two "convert" skills are alike."""
    return np.asarray([[float(k in t) for k in KEYWORDS] for t in texts], dtype=np.float32)


class Counting:
    model = "keywords"

    def __init__(self) -> None:
        self.texts = 0

    def __call__(self, texts: list[str]) -> np.ndarray:
        self.texts += len(texts)
        return keyword_embed(texts)


def test_the_manager_consolidates_a_redis_skillbook_and_caches_embeddings_in_redis(
    store: RedisSkillbookStore, redis_client: redis.Redis
) -> None:
    first, second, *_ = seeded(store)
    book = StoreBackedSkillbook(store)

    def manager(embedder: Counting) -> DeduplicationManager:
        cache = RedisEmbeddingCache(redis_client, store.keys)
        detector = SimilarityDetector(embedder, model_name="keywords", cache=cache)
        return DeduplicationManager(DeduplicationConfig(auto_merge_threshold=0.97), detector=detector)

    embedder = Counting()
    report = book.apply_consolidation(manager(embedder).plan(book))
    assert report.merged == {first: [second]}
    assert store.export().get_skill(second).status == "invalid"  # type: ignore[union-attr]
    assert embedder.texts == 5
    # A new process (new detector, empty memory) over the unchanged skillbook embeds nothing.
    again = Counting()
    assert manager(again).plan(book).operations == []
    assert again.texts == 0
    assert len(RedisEmbeddingCache(redis_client, store.keys)) >= 4


def test_the_memo_spares_redis_the_vectors_this_process_already_read(
    store: RedisSkillbookStore, redis_client: redis.Redis
) -> None:
    seeded(store)
    book = StoreBackedSkillbook(store)
    memo = InMemoryEmbeddingCache()
    first = SimilarityDetector(
        Counting(), model_name="keywords", cache=RedisEmbeddingCache(redis_client, store.keys)
    )
    first.ensure_embeddings(book)  # computed and written to Redis, by another worker say
    cache = RedisEmbeddingCache(redis_client, store.keys, memo=memo)
    hashes = [first.hash_of(skill.content) for skill in book.skills()]
    from_redis = cache.get_many(hashes)
    assert len(from_redis) == 5
    assert len(memo) == 5
    redis_client.delete(store.keys.embeddings)  # from here on, only the memo can answer
    assert cache.get_many(hashes) == from_redis


WRITE_METHODS = (
    "apply_update",
    "apply_consolidation",
    "add_skill",
    "update_skill",
    "tag_skill",
    "remove_skill",
    "set_embeddings",
    "set_similarity_decision",
)


def test_a_cached_snapshot_has_no_way_to_write(store: RedisSkillbookStore) -> None:
    _, second, *_ = seeded(store)
    _, snapshot = store.cached_snapshot()
    assert [name for name in WRITE_METHODS if hasattr(snapshot, name)] == []
    kept = snapshot.get_skill(second)
    assert kept is not None
    assert kept.is_active


def test_the_store_backed_skillbook_is_a_writer_over_the_store_not_a_skillbook(
    store: RedisSkillbookStore,
) -> None:
    seeded(store)
    book = StoreBackedSkillbook(store)
    assert not isinstance(book, Skillbook)
    assert isinstance(book, WritableSkillbook)
    assert [name for name in WRITE_METHODS if not callable(getattr(book, name, None))] == []
    # The writer reads the cached snapshot, which leaves provenance out; export() has it.
    assert without_provenance(book.to_dict()) == without_provenance(store.export().to_dict())


def test_a_similarity_decision_through_the_store_backed_skillbook_reaches_redis(
    store: RedisSkillbookStore, redis_client: redis.Redis
) -> None:
    first, second, *_ = seeded(store)
    before = store.version()
    StoreBackedSkillbook(store).set_similarity_decision(
        first, second, SimilarityDecision(decision="KEEP", reasoning="different units")
    )
    assert store.version() == before + 1
    # Another process (its own store object and snapshot cache) sees the decision.
    elsewhere = StoreBackedSkillbook(
        RedisSkillbookStore(redis_client, store.name, snapshot_cache=SnapshotCache())
    )
    assert elsewhere.has_keep_decision(second, first)
    assert store.similarity_decisions()[tuple(sorted((first, second)))].reasoning == "different units"


def test_adding_one_skill_to_a_full_skillbook_raises_naming_the_limit(redis_client: redis.Redis) -> None:
    store = RedisSkillbookStore(redis_client, "tiny", max_skills=1, snapshot_cache=SnapshotCache())
    book = StoreBackedSkillbook(store)
    book.add_skill("general", "Check units.")
    with pytest.raises(SkillbookFullError, match=r"'tiny' is full.*limit of 1 active skills"):
        book.add_skill("general", "Cite sources.")
    assert len(book) == 1


def test_a_consolidation_planned_on_text_since_rewritten_is_refused_with_nothing_written(
    store: RedisSkillbookStore,
) -> None:
    first, second, *_ = seeded(store)
    planned = ConsolidationBatch(
        operations=[MergeOp(keep_id=first, merge_ids=[second], merged_content="Convert units first.")],
        planned_contents={first: "Convert units before adding.", second: "Convert all units before you add."},
    )
    store.apply(batch(update(first, "Convert units, then check the magnitudes.")))
    before = store.version()
    with pytest.raises(InvalidConsolidationError, match="rewritten after the plan") as caught:
        store.apply_consolidation(planned)
    assert caught.value.skill_id == first
    assert store.version() == before
    kept = store.export().get_skill(first)
    assert kept is not None
    assert kept.content == "Convert units, then check the magnitudes."
