"""Provenance in the Redis store: bounded, kept beside the skills, merged by dedup, shown by skill_history."""

from __future__ import annotations

import json

import pytest
import redis

from ace_workers.core import ConsolidationBatch, MergeOp, Skillbook, UpdateBatch, UpdateOperation
from ace_workers.distributed import RedisSkillbookStore, SnapshotCache, UnknownSkillbookError
from ace_workers.distributed.store import StoreBackedSkillbook, WriteScope, write_scope
from ace_workers.distributed.store.provenance_reader import NO_BATCH, skill_history
from ace_workers.distributed.store.review_policy import ReviewPolicy
from ace_workers.errors import UnknownSkillError

KEEP = 3


@pytest.fixture
def kept(redis_client: redis.Redis) -> RedisSkillbookStore:
    """A skillbook whose skills keep KEEP occurrences."""
    return RedisSkillbookStore(redis_client, "kept", snapshot_cache=SnapshotCache(), provenance_keep=KEEP)


def _add(store: RedisSkillbookStore, content: str, **source: object) -> str:
    op = UpdateOperation(type="ADD", section="math", content=content, insight_source=source or None)
    return store.apply(UpdateBatch(operations=[op])).report.added[0]


def _tag(store: RedisSkillbookStore, skill_id: str, **source: object) -> None:
    op = UpdateOperation(type="TAG", skill_id=skill_id, metadata={"helpful": 1}, insight_source=source)
    store.apply(UpdateBatch(operations=[op]))


def test_many_tags_keep_the_origin_and_the_newest_and_count_them_all(kept: RedisSkillbookStore) -> None:
    skill_id = _add(kept, "Check units.", sample_index=1, actor="skill_manager")
    for number in range(2, 22):
        _tag(kept, skill_id, sample_index=number, actor="reflector")
    skill = kept.export().get_skill(skill_id)
    assert skill is not None
    assert skill.helpful == 20
    assert [(o["operation_type"], o["sample_index"]) for o in skill.occurrences] == [
        ("ADD", 1),
        ("TAG", 20),
        ("TAG", 21),
    ]
    assert skill.occurrence_totals == {"ADD": 1, "TAG": 20}


def test_provenance_stays_out_of_cached_snapshots_and_the_change_log(kept: RedisSkillbookStore) -> None:
    skill_id = _add(kept, "Check units.", batch_id="b1", sample_index=1)
    _tag(kept, skill_id, batch_id="b1", sample_index=2)
    _, view = kept.cached_snapshot()
    cached = view.get_skill(skill_id)
    assert cached is not None and cached.occurrences == [] and cached.helpful == 1
    for change in kept.history():
        assert "occurrences" not in json.dumps(change.after)
    assert [o["sample_index"] for o in kept.export().get_skill(skill_id).occurrences] == [1, 2]  # type: ignore[union-attr]


def test_a_removed_skill_takes_its_provenance_and_its_history_shows_the_remove(
    kept: RedisSkillbookStore, redis_client: redis.Redis
) -> None:
    skill_id = _add(kept, "Check units.", sample_index=1)
    op = UpdateOperation(
        type="REMOVE", skill_id=skill_id, insight_source={"actor": "user:ann", "note": "wrong"}
    )
    kept.apply(UpdateBatch(operations=[op]))
    assert not redis_client.hexists(kept.keys.provenance, skill_id)
    history = skill_history(kept, skill_id)
    assert history.state == "removed"
    assert history.skill is None
    remove, add = history.changes  # newest first
    assert remove.operations[0].insight_source == {"actor": "user:ann", "note": "wrong"}
    assert (remove.after[skill_id], add.before[skill_id]) == (None, None)


def test_a_dedup_merge_records_the_dedup_actor_and_stays_bounded(kept: RedisSkillbookStore) -> None:
    first = _add(kept, "Check the units.", sample_index=1)
    second = _add(kept, "Always check units.", sample_index=2)
    for number in range(3, 8):
        _tag(kept, first, sample_index=number)
        _tag(kept, second, sample_index=number)
    merge = MergeOp(keep_id=first, merge_ids=[second], merged_content="Check units.", reasoning="same rule")
    kept.apply_consolidation(ConsolidationBatch(operations=[merge]))
    book = kept.export()
    survivor, merged = book.get_skill(first), book.get_skill(second)
    assert survivor is not None and merged is not None
    assert len(survivor.occurrences) == KEEP
    assert survivor.occurrences[0]["operation_type"] == "ADD"
    assert survivor.occurrences[-1] | {"time": None} == {
        "operation_type": "MERGE",
        "actor": "dedup",
        "reasoning": "same rule",
        "merged_from": [second],
        "time": None,
    }
    assert survivor.occurrence_totals == {"ADD": 2, "TAG": 10, "MERGE": 1}
    assert merged.status == "invalid"
    assert (merged.occurrences[-1]["operation_type"], merged.occurrences[-1]["actor"]) == ("REMOVE", "dedup")


def test_a_rollback_restores_the_skill_and_keeps_what_happened_to_it(kept: RedisSkillbookStore) -> None:
    skill_id = _add(kept, "Check units.", sample_index=1)
    _tag(kept, skill_id, sample_index=2)
    kept.rollback(1)
    skill = kept.export().get_skill(skill_id)
    assert skill is not None
    assert skill.helpful == 0  # the state is version 1's
    assert skill.occurrence_totals == {"ADD": 1, "TAG": 1}  # the history is not undone


def test_an_import_keeps_occurrences_bounded_to_the_store(kept: RedisSkillbookStore) -> None:
    book = Skillbook()
    skill = book.add_skill("math", "Check units.", sources=[{"sample_index": 1}])
    for number in range(2, 10):
        book.tag_skill(skill.id, "helpful", source={"sample_index": number})
    kept.import_skillbook(book)
    stored = kept.export().get_skill(skill.id)
    assert stored is not None
    assert [o["sample_index"] for o in stored.occurrences] == [1, 8, 9]
    assert stored.occurrence_totals == {"ADD": 1, "TAG": 8}


def test_skill_history_names_an_unknown_skillbook_or_skill(kept: RedisSkillbookStore) -> None:
    with pytest.raises(UnknownSkillbookError, match="'kept'"):
        skill_history(kept, "math-00001")
    skill_id = _add(kept, "Check units.")
    with pytest.raises(UnknownSkillError, match="'math-09999'"):
        skill_history(kept, "math-09999")
    with pytest.raises(ValueError, match="scan must be a positive int"):
        skill_history(kept, skill_id, scan=0)
    # A skill written by hand has no batch to look its trace up in.
    assert [e.status for e in skill_history(kept, skill_id).occurrences] == [NO_BATCH]


def test_an_approved_proposal_records_where_its_operations_came_from(kept: RedisSkillbookStore) -> None:
    kept.review.set_policy(ReviewPolicy.everything("review"), actor="user:alice")
    source = {"actor": "skill_manager", "batch_id": "b1", "sample_index": 4, "insight": "units matter"}
    op = UpdateOperation(type="ADD", section="math", content="Check units.", insight_source=source)
    scope = WriteScope(key_prefix="b1:e1s4:3", source={"batch": "b1", "epoch": 1, "sample": 4})
    with write_scope(scope):
        StoreBackedSkillbook(kept).apply_update(UpdateBatch(operations=[op]))
    assert kept.export().skills() == []  # waiting for review
    [proposal] = kept.review.proposals()
    kept.review.approve(proposal.id, actor="user:alice")
    [skill] = kept.export().skills()
    [origin] = skill.occurrences
    assert {key: origin[key] for key in source} == source
    assert origin["operation_type"] == "ADD"
