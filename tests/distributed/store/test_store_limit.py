"""The skillbook-size limit against a real Redis: ADDs beyond it are left out, the rest applies."""

from __future__ import annotations

import logging
import threading

import pytest
import redis

from ace_workers.core import DeleteOp, Skillbook
from ace_workers.core.consolidation import ConsolidationBatch
from ace_workers.distributed import RedisSkillbookStore, SnapshotCache
from ace_workers.distributed.store.transactions import META_ACTIVE_SKILLS
from tests.support.operations import add, batch, remove, tag


def limited(client: redis.Redis, limit: int, name: str = "book") -> RedisSkillbookStore:
    return RedisSkillbookStore(client, name, max_skills=limit, snapshot_cache=SnapshotCache())


def active_in_snapshot(store: RedisSkillbookStore) -> int:
    return len(store.snapshot()[1].skills())


def test_adds_beyond_the_limit_are_left_out_and_the_rest_of_the_batch_applies(
    redis_client: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    store = limited(redis_client, 3)
    first, _ = store.apply(batch(add("Check units."), add("Cite sources."))).report.added
    with caplog.at_level(logging.WARNING, logger="ace_workers.distributed.store.planning"):
        result = store.apply(batch(tag(first, helpful=1), add("Round late."), add("Show your work.")))

    assert result.report.full == [2]  # the second ADD found no room
    assert len(result.report.added) == 1
    assert result.report.tagged == [first]  # the vote still counts
    assert result.version == 2
    skill = store.snapshot()[1].get_skill(first)
    assert skill is not None
    assert skill.helpful == 1
    assert store.active_skills() == active_in_snapshot(store) == 3
    assert store.stats()["adds_skipped_full"] == 1
    assert store.stats()["skipped_ops"] == 1
    warnings = [r.getMessage() for r in caplog.records if "is full" in r.getMessage()]
    assert len(warnings) == 1
    assert "'book' version 2" in warnings[0]
    assert "skipped 1 ADD operation (#2)" in warnings[0]


def test_at_the_limit_votes_restatements_and_removals_apply_and_a_lone_add_is_left_out(
    redis_client: redis.Redis,
) -> None:
    store = limited(redis_client, 3)
    added = store.apply(batch(add("Check units."), add("Cite sources."), add("Round late."))).report.added
    assert store.active_skills() == 3
    # At the limit: votes, restating an existing skill, and a removal paired with an ADD still apply.
    assert store.apply(batch(tag(added[0], helpful=2), add("check units"))).report.full == []
    result = store.apply(batch(remove(added[1]), add("Show your work.")))
    assert result.report.removed == [added[1]]
    assert len(result.report.added) == 1
    assert result.report.full == []
    assert store.active_skills() == active_in_snapshot(store) == 3
    lone = store.apply(batch(add("One too many.")))
    assert (lone.report.full, lone.report.added) == ([0], [])
    assert store.active_skills() == 3


def test_an_add_restated_later_in_the_batch_is_left_out_with_its_restatement(
    redis_client: redis.Redis,
) -> None:
    store = limited(redis_client, 3)
    store.apply(batch(add("Check units."), add("Cite sources.")))
    # Room for one: leaving out "Round late." alone would let its restatement (#2) add it after all.
    result = store.apply(batch(add("Show your work."), add("Round late."), add("round late")))
    assert result.report.full == [1, 2]
    book = store.snapshot()[1]
    assert sorted(skill.content for skill in book.skills()) == [
        "Check units.",
        "Cite sources.",
        "Show your work.",
    ]
    assert store.active_skills() == active_in_snapshot(store) == 3


def test_a_second_delivery_answers_with_the_adds_the_first_left_out(redis_client: redis.Redis) -> None:
    store = limited(redis_client, 1)
    operations = batch(add("Check units."), add("Cite sources."))
    first = store.apply(operations, idempotency_key="sample-1")
    again = store.apply(operations, idempotency_key="sample-1")
    assert again.duplicate_delivery
    assert first.report.full == again.report.full == [1]
    assert store.stats()["adds_skipped_full"] == 1


def test_the_count_follows_every_kind_of_write(redis_client: redis.Redis) -> None:
    store = limited(redis_client, 10)
    added = store.apply(batch(*(add(f"Lesson {n}.") for n in range(4)))).report.added
    counts = [store.active_skills()]
    store.apply(batch(remove(added[0])))
    counts.append(store.active_skills())
    store.apply_consolidation(ConsolidationBatch(operations=[DeleteOp(skill_id=added[1])]))
    counts.append(store.active_skills())
    assert active_in_snapshot(store) == 2
    store.rollback(1)
    counts.append(store.active_skills())
    book = Skillbook()
    for n in range(6):
        book.add_skill("general", f"Imported {n}.")
    store.import_skillbook(book, replace=True)
    counts.append(store.active_skills())
    assert counts == [4, 3, 2, 4, 6]
    assert store.active_skills() == active_in_snapshot(store)


def test_a_skillbook_written_before_the_count_was_kept_is_counted_once(redis_client: redis.Redis) -> None:
    store = limited(redis_client, 3)
    added = store.apply(batch(add("Check units."), add("Cite sources."), add("Round late."))).report.added
    redis_client.hdel(store.keys.meta, META_ACTIVE_SKILLS)  # as an older version left it
    assert store.active_skills() == 3
    assert store.apply(batch(add("One too many."))).report.full == [0]
    store.apply(batch(tag(added[0], helpful=1)))
    assert int(redis_client.hget(store.keys.meta, META_ACTIVE_SKILLS) or -1) == 3


def test_writers_racing_for_the_last_place_one_adds_the_others_are_left_out(
    redis_client: redis.Redis,
) -> None:
    seed = limited(redis_client, 5)
    seed.apply(batch(*(add(f"Lesson {n}.") for n in range(4))))
    writers = 6
    barrier = threading.Barrier(writers)
    outcomes: list[str] = []
    lock = threading.Lock()

    def write(number: int) -> None:
        store = RedisSkillbookStore(redis_client, "book", max_skills=5, max_attempts=50)
        barrier.wait()
        report = store.apply(batch(add(f"Racer {number}."), tag("general-00001", helpful=1))).report
        with lock:
            outcomes.append("full" if report.full else "added")

    threads = [threading.Thread(target=write, args=(n,)) for n in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert sorted(outcomes) == ["added"] + ["full"] * (writers - 1)
    assert seed.active_skills() == active_in_snapshot(seed) == 5
    first = seed.snapshot()[1].get_skill("general-00001")
    assert first is not None
    assert first.helpful == writers  # every writer's vote applied, room or not


def test_max_skills_must_be_a_positive_int(redis_client: redis.Redis) -> None:
    with pytest.raises(ValueError, match="max_skills"):
        RedisSkillbookStore(redis_client, "book", max_skills=0)
