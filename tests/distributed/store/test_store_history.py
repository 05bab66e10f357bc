"""The change log of the Redis store: history, diff between versions, rollback as a new version."""

from __future__ import annotations

from typing import Any

import pytest
import redis

from ace_workers.core import Skillbook, UpdateBatch, UpdateOperation
from ace_workers.distributed import ChangeKind, RedisSkillbookStore, UnknownSkillbookError
from ace_workers.distributed.store.errors import HeadMovedError
from tests.support.operations import add, batch
from tests.support.provenance import skills_without_provenance


def ops(*operations: dict[str, Any]) -> UpdateBatch:
    return UpdateBatch(operations=[UpdateOperation(**op) for op in operations])


def _five_versions(store: RedisSkillbookStore) -> dict[int, dict[str, Any]]:
    """Versions 1..5 of a small skillbook; returns a deep copy of the skills at each version."""
    batches = [
        ops(
            {"type": "ADD", "section": "math", "content": "Check units."},
            {"type": "ADD", "section": "math", "content": "Estimate first"},
        ),  # v1: math-00001, math-00002
        ops({"type": "TAG", "skill_id": "math-00001", "metadata": {"helpful": 1}}),  # v2
        ops(
            {"type": "ADD", "section": "reading", "content": "Read twice"},
            {"type": "UPDATE", "skill_id": "math-00002", "content": "Estimate, then compute"},
        ),  # v3: reading-00003
        ops({"type": "REMOVE", "skill_id": "math-00001"}),  # v4
        ops({"type": "TAG", "skill_id": "reading-00003", "metadata": {"harmful": 2}}),  # v5
    ]
    states = {0: skills_without_provenance(store.snapshot()[1].to_dict())}
    for number, work in enumerate(batches, start=1):
        result = store.apply(work, source={"sample_id": f"s{number}"}, idempotency_key=f"k{number}")
        assert result.version == number
        states[number] = skills_without_provenance(store.snapshot()[1].to_dict())
    return states


def test_history_lists_the_changes_newest_first(store: RedisSkillbookStore) -> None:
    _five_versions(store)
    history = store.history(limit=3)
    assert [record.version for record in history] == [5, 4, 3]
    assert history[0].source == {"sample_id": "s5"}
    assert history[0].idempotency_key == "k5"
    assert history[1].operations[0].type == "REMOVE"
    assert history[1].after == {"math-00001": None}
    assert [record.version for record in store.history()] == [5, 4, 3, 2, 1]


def test_history_pages_back_from_a_version_before_which_it_starts(store: RedisSkillbookStore) -> None:
    _five_versions(store)
    assert [record.version for record in store.history(limit=2, before=5)] == [4, 3]
    assert [record.version for record in store.history(limit=9, before=3)] == [2, 1]
    assert store.history(before=1) == []


def test_diff_lists_exactly_the_skills_changed_between_two_versions(store: RedisSkillbookStore) -> None:
    states = _five_versions(store)
    diff = store.diff(2, 4)
    assert set(diff) == {"math-00001", "math-00002", "reading-00003"}  # v3 and v4, not v5's tag
    assert diff["math-00001"] == (states[2]["math-00001"], None)
    assert diff["math-00002"] == (states[2]["math-00002"], states[4]["math-00002"])
    assert diff["reading-00003"] == (None, states[4]["reading-00003"])
    assert store.diff(4, 5) == {"reading-00003": (states[4]["reading-00003"], states[5]["reading-00003"])}
    assert store.diff(3, 3) == {}
    assert set(store.diff(0, 5)) == set(states[5])  # math-00001 came and went: no net change
    with pytest.raises(ValueError, match="current version"):
        store.diff(2, 6)
    with pytest.raises(ValueError):
        store.diff(4, 2)


def test_rollback_restores_a_version_as_a_new_one(store: RedisSkillbookStore) -> None:
    states = _five_versions(store)
    assert store.rollback(2, source={"by": "ops"}) == 6
    assert store.version() == 6
    assert skills_without_provenance(store.snapshot()[1].to_dict()) == states[2]
    [latest] = store.history(limit=1)
    assert latest.kind == ChangeKind.ROLLBACK
    assert latest.version == 6
    assert latest.source == {"by": "ops", "rollback_to": 2}
    assert [record.version for record in store.history()] == [6, 5, 4, 3, 2, 1]  # nothing rewritten
    # The content index follows: the restored skill is a duplicate target again, the dropped one is not.
    result = store.apply(
        ops(
            {"type": "ADD", "section": "math", "content": "check units"},
            {"type": "ADD", "section": "reading", "content": "Read twice"},
            {"type": "ADD", "section": "math", "content": "Estimate first"},
            {"type": "ADD", "section": "math", "content": "Estimate, then compute"},
        )
    )
    assert result.report.duplicates == [(0, "math-00001"), (2, "math-00002")]
    assert result.report.added == ["reading-00004", "math-00005"]  # ids are never reissued
    # A rollback is itself a change: rolling back over it restores version 5.
    assert store.rollback(5) == 8
    assert skills_without_provenance(store.snapshot()[1].to_dict()) == states[5]
    assert store.diff(5, 8) == {}


def test_rollback_to_the_current_version_changes_nothing(store: RedisSkillbookStore) -> None:
    _five_versions(store)
    assert store.rollback(5) == 5
    assert store.version() == 5
    with pytest.raises(ValueError, match="current version is 5"):
        store.rollback(9)
    with pytest.raises(ValueError, match="non-negative"):
        store.rollback(-1)


def test_a_rollback_expecting_another_head_changes_nothing(store: RedisSkillbookStore) -> None:
    _five_versions(store)
    with pytest.raises(HeadMovedError, match="expected the head at version 4 but it is at 5"):
        store.rollback(2, expect=4)
    assert store.version() == 5
    assert store.rollback(2, expect=5) == 6


def test_rollback_of_an_unknown_skillbook_is_a_clear_error(store: RedisSkillbookStore) -> None:
    with pytest.raises(UnknownSkillbookError):
        store.rollback(0)


def test_rollback_to_zero_empties_the_skillbook(store: RedisSkillbookStore) -> None:
    _five_versions(store)
    assert store.rollback(0) == 6
    assert len(store.snapshot()[1]) == 0
    assert store.apply(ops({"type": "ADD", "section": "math", "content": "Check units."})).report.added == [
        "math-00004"
    ]


def test_rollback_over_an_import_restores_what_was_replaced(store: RedisSkillbookStore) -> None:
    states = _five_versions(store)
    other = Skillbook()
    other.add_skill("general", "Something else")
    assert store.import_skillbook(other, replace=True) == 6
    assert set(store.diff(5, 6)) == set(states[5]) | {"general-00001"}
    store.rollback(5)
    assert skills_without_provenance(store.snapshot()[1].to_dict()) == states[5]


def test_a_trimmed_change_log_refuses_diff_and_rollback_beyond_it(redis_client: redis.Redis) -> None:
    store = RedisSkillbookStore(redis_client, "short", changelog_maxlen=5)
    for number in range(150):
        store.apply(ops({"type": "ADD", "section": "math", "content": f"Lesson {number}"}))
    assert redis_client.xlen(store.keys.changes) < 150  # trimmed (approximately, by whole nodes)
    with pytest.raises(ValueError, match="no longer reaches back to version 1"):
        store.diff(0, 150)
    with pytest.raises(ValueError, match="trimmed"):
        store.rollback(10)
    assert store.version() == 150  # the refused rollback changed nothing
    assert set(store.diff(145, 150)) == {f"math-{n:05d}" for n in range(146, 151)}  # recent ones are kept


def test_a_long_history_is_read_in_pages_and_loses_no_change(store: RedisSkillbookStore) -> None:
    # More changes than one page of XREVRANGE: every version comes back, newest first, once.
    for n in range(1_203):
        store.apply(batch(add(f"Skill number {n} of a long history.")))
    versions = [change.version for change in store.history(limit=2_000)]
    assert versions == list(range(1_203, 0, -1))
    assert [c.version for c in store.history(limit=501)] == list(range(1_203, 702, -1))
