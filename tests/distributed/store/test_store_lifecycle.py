"""Pin, archive, restore and prune through the Redis store: one versioned transaction each."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
import redis

from ace_workers.core import Skillbook
from ace_workers.core.consolidation import ConsolidationBatch, MergeOp
from ace_workers.core.lifecycle_rules import StaleRule
from ace_workers.core.prompt_budget import PromptBudget
from ace_workers.dedup import DeduplicationConfig, DeduplicationManager, SimilarityDetector
from ace_workers.distributed import RedisSkillbookStore, SnapshotCache
from ace_workers.distributed.store.backed_skillbook import StoreBackedSkillbook
from ace_workers.distributed.store.changelog import ChangeKind
from ace_workers.distributed.store.errors import StaleHistoryError, UnknownSkillbookError
from ace_workers.distributed.store.keys import content_field
from ace_workers.distributed.store.transactions import META_ACTIVE_SKILLS
from ace_workers.errors import InvalidConsolidationError, PinnedSkillError, UnknownSkillError
from tests.support.embedders import keyword_embedder
from tests.support.fixtures import connect_test_redis
from tests.support.hooked_redis import HookedRedis
from tests.support.operations import add, batch, remove, tag

OLD = (datetime.now(UTC) - timedelta(days=60)).isoformat()


def seeded(store: RedisSkillbookStore) -> list[str]:
    """Three skills of "math" and one of "units"."""
    result = store.apply(
        batch(
            add("Check units before adding.", "math"),
            add("Estimate the answer first.", "math"),
            add("Round to two decimals.", "math"),
            add("Convert to metres.", "units"),
        )
    )
    return result.report.added


def active_count(store: RedisSkillbookStore, client: redis.Redis) -> int:
    """The count the meta hash keeps (what the size limit is checked against)."""
    return int(client.hget(store.keys.meta, META_ACTIVE_SKILLS) or -1)


def test_archive_takes_a_skill_out_of_prompt_count_and_content_index_and_restore_brings_it_back(
    store: RedisSkillbookStore, redis_client: redis.Redis
) -> None:
    first, second, *_ = seeded(store)
    _, cached = store.cached_snapshot()
    assert "Check units" in cached.as_prompt(PromptBudget(max_skills=10), "units")
    result = store.archive([first], actor="user:ann", note="superseded")
    assert (result.version, result.changed, result.unchanged) == (2, [first], [])
    # The worker's cached snapshot is brought forward through the LIFECYCLE entry.
    _, cached = store.cached_snapshot()
    assert "Check units" not in cached.as_prompt()
    assert "Check units" not in cached.as_prompt(PromptBudget(max_skills=10), "units")
    assert cached.as_prompt() == store.snapshot()[1].as_prompt()
    assert cached.stats() == store.snapshot()[1].stats()
    assert cached.stats()["archived"] == 1
    assert store.active_skills() == 3
    assert active_count(store, redis_client) == 3
    archived = store.archived()
    assert [s.id for s in archived] == [first]
    assert archived[0].archive_info is not None
    assert (archived[0].archive_info["by"], archived[0].archive_info["reason"]) == ("user:ann", "superseded")
    # Out of the content index: the same text is a new skill, not a duplicate of the archived one.
    field = content_field("math", "Check units before adding.")
    assert redis_client.hget(store.keys.content, field) is None
    (again,) = store.apply(batch(add("Check units before adding.", "math"))).report.added
    assert store.archive([first]).unchanged == [first]  # already archived: no version
    assert store.version() == 3
    restored = store.restore([first], actor="user:ann")
    assert restored.changed == [first]
    assert json.loads(redis_client.hget(store.keys.content, field) or "[]") == [first, again]
    assert "Check units" in store.cached_snapshot()[1].as_prompt()
    assert store.active_skills() == 5
    assert second in store.export()


def test_a_lifecycle_change_is_one_change_log_entry_with_actor_note_and_images(
    store: RedisSkillbookStore,
) -> None:
    first, *_ = seeded(store)
    store.pin([first], actor="key:ci", note="core rule")
    record = store.history(limit=1)[0]
    assert record.kind is ChangeKind.LIFECYCLE
    assert record.source == {"action": "pin", "actor": "key:ci", "note": "core rule", "skills": [first]}
    assert record.before[first] is not None
    assert "pinned" not in record.before[first]
    assert record.after[first]["pinned"] is True  # type: ignore[index]
    assert store.diff(1, 2)[first][1]["pinned"] is True  # type: ignore[index]


def test_rollback_of_an_archive_restores_the_skill(store: RedisSkillbookStore) -> None:
    first, *_ = seeded(store)
    store.archive([first])
    store.rollback(1)
    skill = store.export().get_skill(first)
    assert skill is not None
    assert (skill.status, skill.archive_info) == ("active", None)
    assert store.active_skills() == 4
    assert "Check units" in store.cached_snapshot()[1].as_prompt()


def test_a_pinned_skill_survives_a_skillmanager_remove_and_the_rest_applies(
    store: RedisSkillbookStore,
) -> None:
    first, second, *_ = seeded(store)
    store.pin([first])
    result = store.apply(batch(remove(first), tag(second, helpful=1), remove(second)))
    assert result.report.pinned == [(0, first)]
    assert result.report.removed == [second]
    assert store.stats()["skipped_ops"] == 1
    assert first in store.export()
    writer = StoreBackedSkillbook(store)
    with pytest.raises(PinnedSkillError, match=f"skill '{first}' of skillbook 'book' is pinned"):
        writer.remove_skill(first)


def test_archiving_a_pinned_skill_is_refused_whole_and_unknown_ids_are_named(
    store: RedisSkillbookStore,
) -> None:
    first, second, *_ = seeded(store)
    store.pin([first])
    with pytest.raises(PinnedSkillError, match=f"skill '{first}' of skillbook 'book' is pinned"):
        store.archive([second, first])
    assert store.version() == 2  # nothing of the request applied, not even the second skill
    assert store.export().get_skill(second).status == "active"  # type: ignore[union-attr]
    with pytest.raises(UnknownSkillError, match="no skill with id 'math-00077' in skillbook 'book'"):
        store.pin([second, "math-00077"])
    with pytest.raises(UnknownSkillbookError):
        RedisSkillbookStore(store._redis, "nobody").pin(["x-00001"])


def test_a_pinned_near_duplicate_pair_is_not_merged_by_dedup_through_the_store(
    store: RedisSkillbookStore,
) -> None:
    store.apply(
        batch(
            add("For zorb questions, reverse the digits of the input.", "zorb"),
            add("In zorb questions, reverse the digits of the input.", "zorb"),
        )
    )
    first, second = (s.id for s in store.export().skills())
    detector = SimilarityDetector(keyword_embedder(["zorb", "reverse", "digits"]))
    manager = DeduplicationManager(
        DeduplicationConfig(similarity_threshold=0.5, auto_merge_threshold=0.9), detector=detector
    )
    writer = StoreBackedSkillbook(store)
    store.pin([second])
    assert manager.find_similar_pairs(writer) == []
    assert not manager.deduplicate(writer).changed
    assert [s.id for s in store.export().skills()] == [first, second]
    # The store refuses a merge naming it too (a plan made before the pin, say).
    with pytest.raises(InvalidConsolidationError, match=f"skill '{second}' is pinned"):
        store.apply_consolidation(ConsolidationBatch(operations=[MergeOp(keep_id=first, merge_ids=[second])]))
    store.unpin([second])
    assert manager.deduplicate(writer).merged == {first: [second]}


def aged_book(ages: dict[str, int]) -> Skillbook:
    """Skills of "math" last touched ``ages[content]`` days ago."""
    book = Skillbook()
    for content, days in ages.items():
        skill = book.add_skill("math", content)
        book._skills[skill.id].updated_at = (datetime.now(UTC) - timedelta(days=days)).isoformat()
    return book


def test_prune_dry_run_lists_and_apply_archives_exactly_the_candidates_in_one_version(
    store: RedisSkillbookStore,
) -> None:
    store.import_skillbook(aged_book({"Old one.": 60, "Old pinned.": 60, "Old tagged.": 60, "New.": 1}))
    old, pinned, tagged, new = (s.id for s in store.export().skills())
    store.pin([pinned])
    store.apply(batch(tag(tagged, helpful=1)))
    version = store.version()
    plan = store.plan_prune(StaleRule(days=30))
    assert [c.skill_id for c in plan.candidates] == [old]
    assert plan.candidates[0].reason.startswith("not tagged or updated for 60 days")
    assert store.version() == version  # a dry run changes nothing
    _, result = store.prune(StaleRule(days=30), note="monthly")
    assert (result.version, result.changed) == (version + 1, [old])
    record = store.history(limit=1)[0]
    assert record.kind is ChangeKind.LIFECYCLE
    assert record.source is not None
    assert (record.source["action"], record.source["actor"]) == ("prune", "prune")
    assert set(record.after) == {old}
    skill = store.export().get_skill(old)
    assert skill is not None
    assert skill.is_archived
    assert skill.archive_info is not None
    assert skill.archive_info["reason"].endswith("; monthly")
    assert store.prune(StaleRule(days=30))[1].changed == []  # nothing stale is left
    assert store.version() == version + 1
    assert {new, pinned, tagged} <= {s.id for s in store.export().skills()}


def test_prune_by_batches_reads_which_skills_the_last_batches_touched(store: RedisSkillbookStore) -> None:
    first, second, third, fourth = seeded(store)
    store.apply(batch(tag(first, helpful=1)), source={"batch": "b1"})
    store.apply(batch(tag(second, helpful=1)), source={"batch": "b2"})
    store.apply(batch(tag(third, helpful=1)), source={"batch": "b3"})
    plan = store.plan_prune(StaleRule(batches=2))
    # b3 and b2 are the last two batches; first was last tagged by b1, fourth never.
    assert [c.skill_id for c in plan.candidates] == [first, fourth]
    assert store.plan_prune(StaleRule(batches=3)).candidates[0].skill_id == fourth
    # Only three batches ever wrote: no skill has missed four.
    assert store.plan_prune(StaleRule(batches=4)).candidates == []


def test_prune_by_batches_refuses_a_window_the_trimmed_log_no_longer_holds(
    redis_client: redis.Redis,
) -> None:
    store = RedisSkillbookStore(redis_client, "trimmed", changelog_maxlen=1, snapshot_cache=SnapshotCache())
    (skill_id,) = store.apply(batch(add("One rule."))).report.added
    for number in range(200):  # XADD's approximate trimming keeps about 100 entries
        store.apply(batch(tag(skill_id, helpful=1)), source={"batch": f"b{number}"})
    with pytest.raises(StaleHistoryError, match="the change log holds only the last"):
        store.plan_prune(StaleRule(batches=1000))


def test_prune_leaves_out_a_candidate_tagged_between_the_plan_and_the_write(
    store: RedisSkillbookStore, redis_client: redis.Redis
) -> None:
    store.import_skillbook(aged_book({"Old one.": 60, "Old two.": 60}))
    one, two = (s.id for s in store.export().skills())
    real_snapshot = store.snapshot

    def snapshot_then_tag() -> tuple[int, Skillbook]:
        taken = real_snapshot()
        store.apply(batch(tag(two, helpful=1)))  # a worker uses the skill after the plan read
        return taken

    store._lifecycle._snapshot = snapshot_then_tag
    plan, result = store.prune(StaleRule(days=30))
    assert [c.skill_id for c in plan.candidates] == [one, two]
    assert result.changed == [one]
    assert result.skipped == {two: "tagged or updated since it was found stale"}
    assert store.export().get_skill(two).status == "active"  # type: ignore[union-attr]
    assert json.loads(json.dumps(result.to_dict()))["skipped"] == result.skipped


def test_a_remove_that_loses_the_race_to_a_pin_retries_and_leaves_the_skill(
    store: RedisSkillbookStore, redis_url: str
) -> None:
    first, *_ = seeded(store)
    pinned: list[int] = []

    def pin_first() -> None:
        # Runs after the REMOVE read the skill unpinned, before its MULTI: the pin commits first.
        if not pinned:
            pinned.append(store.pin([first]).version)

    hooked = HookedRedis(connection_pool=connect_test_redis(redis_url).connection_pool)
    hooked.before_multi = pin_first
    remover = RedisSkillbookStore(hooked, "book", snapshot_cache=SnapshotCache())
    result = remover.apply(batch(remove(first)))
    assert pinned == [2]
    assert (result.version, result.report.pinned, result.report.removed) == (3, [(0, first)], [])
    assert first in store.export()
    assert store.stats()["conflicts"] == 1
    hooked.close()


def test_an_archive_that_loses_the_race_to_a_tag_retries_and_keeps_the_count(
    store: RedisSkillbookStore, redis_client: redis.Redis, redis_url: str
) -> None:
    first, second, *_ = seeded(store)
    tagged: list[int] = []

    def tag_first() -> None:
        if not tagged:
            tagged.append(store.apply(batch(tag(first, helpful=2), remove(second))).version)

    hooked = HookedRedis(connection_pool=connect_test_redis(redis_url).connection_pool)
    hooked.before_multi = tag_first
    archiver = RedisSkillbookStore(hooked, "book", snapshot_cache=SnapshotCache())
    result = archiver.archive([first])
    assert (tagged, result.version, result.changed) == ([2], 3, [first])
    skill = store.export().get_skill(first)
    assert skill is not None
    assert (skill.status, skill.helpful) == ("archived", 2)  # the archive did not undo the tag
    assert store.active_skills() == 2
    assert active_count(store, redis_client) == 2
    hooked.close()


def test_a_reader_of_an_earlier_version_still_sees_a_skill_archived_at_the_head(
    store: RedisSkillbookStore,
) -> None:
    first, *_ = seeded(store)
    store.archive([first])
    _, before = store.snapshot_at(1)
    assert "Check units" in before.as_prompt()
    assert "Check units" not in store.cached_snapshot()[1].as_prompt()
