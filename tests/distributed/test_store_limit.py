"""The skillbook-size limit against a real Redis: a batch that would overfill is refused whole."""

from __future__ import annotations

import threading

import pytest
import redis

from ace_workers.core import DeleteOp, Skillbook
from ace_workers.core.consolidation import ConsolidationBatch
from ace_workers.distributed import RedisSkillbookStore, SnapshotCache
from ace_workers.distributed.errors import SkillbookFullError
from ace_workers.distributed.transactions import META_ACTIVE_SKILLS

from .test_store import add, batch, remove, tag


def limited(client: redis.Redis, limit: int, name: str = "book") -> RedisSkillbookStore:
    return RedisSkillbookStore(client, name, max_skills=limit, snapshot_cache=SnapshotCache())


def active_in_snapshot(store: RedisSkillbookStore) -> int:
    return len(store.snapshot()[1].skills())


def test_a_batch_whose_adds_pass_the_limit_is_refused_whole_and_nothing_is_written(
    redis_client: redis.Redis,
) -> None:
    store = limited(redis_client, 3)
    first, _ = store.apply(batch(add("Check units."), add("Cite sources."))).report.added
    before = (store.version(), store.snapshot()[1].to_dict(), store.history(), store.stats())
    with pytest.raises(SkillbookFullError) as caught:
        store.apply(batch(tag(first, helpful=1), add("Round late."), add("Show your work.")))
    error = caught.value
    assert (error.name, error.limit, error.current, error.adds, error.would_hold) == ("book", 3, 2, 2, 4)
    message = str(error)
    assert "'book'" in message and "limit of 3" in message and "ACE_MAX_SKILLBOOK_SKILLS" in message
    assert "Nothing of the batch was applied" in message
    # Not even the TAG: the version, skills, change log and counters are as they were.
    assert (store.version(), store.snapshot()[1].to_dict(), store.history(), store.stats()) == before
    assert store.active_skills() == 2


def test_a_batch_up_to_the_limit_applies_and_removals_make_room(redis_client: redis.Redis) -> None:
    store = limited(redis_client, 3)
    added = store.apply(batch(add("Check units."), add("Cite sources."), add("Round late."))).report.added
    assert store.active_skills() == 3
    # At the limit: votes, restating an existing skill, and a removal paired with an ADD still apply.
    store.apply(batch(tag(added[0], helpful=2), add("check units")))
    result = store.apply(batch(remove(added[1]), add("Show your work.")))
    assert result.report.removed == [added[1]] and len(result.report.added) == 1
    assert store.active_skills() == active_in_snapshot(store) == 3
    with pytest.raises(SkillbookFullError):
        store.apply(batch(add("One too many.")))


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
    with pytest.raises(SkillbookFullError) as caught:
        store.apply(batch(add("One too many.")))
    assert caught.value.current == 3
    store.apply(batch(tag(added[0], helpful=1)))
    assert int(redis_client.hget(store.keys.meta, META_ACTIVE_SKILLS) or -1) == 3


def test_writers_racing_for_the_last_place_one_wins_the_others_are_refused(
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
        try:
            store.apply(batch(add(f"Racer {number}.")))
            outcome = "applied"
        except SkillbookFullError:
            outcome = "full"
        with lock:
            outcomes.append(outcome)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert sorted(outcomes) == ["applied"] + ["full"] * (writers - 1)
    assert seed.active_skills() == active_in_snapshot(seed) == 5


def test_max_skills_must_be_a_positive_int(redis_client: redis.Redis) -> None:
    with pytest.raises(ValueError, match="max_skills"):
        RedisSkillbookStore(redis_client, "book", max_skills=0)
