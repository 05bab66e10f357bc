"""Change digests and per-skill reads of the change log agree with decoding each entry whole.

The console keeps a digest per version instead of decoding entries of 100,000
images on every page, and the skill page reads only one skill's part of such an
entry: both must say what the full ChangeRecord says, for every kind of entry.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
import redis

from ace_workers.core import DeleteOp, MergeOp, SimilarityDecision, Skillbook
from ace_workers.core.consolidation import ConsolidationBatch
from ace_workers.distributed import RedisSkillbookStore
from ace_workers.distributed.store import digest_reads
from ace_workers.distributed.store.change_digest import (
    DIGEST_SHOWN,
    STORED_DIGEST_CHANGES,
    digest_change,
    stored_digest_from_json,
    stored_digest_json,
)
from ace_workers.distributed.store.change_summary import change_effect, change_to_json, operation_counts
from ace_workers.distributed.store.changelog import (
    BIG_IMAGES,
    ChangeKind,
    ChangeRecord,
    decode_change,
    decode_change_of_skill,
    encode_change,
)
from tests.support.fixtures import server_or_cluster
from tests.support.operations import add, batch, remove, tag, update


@pytest.fixture(params=["server", "cluster"])
def redis_client(request: pytest.FixtureRequest) -> Iterator[redis.Redis]:
    """On one Redis and on Redis Cluster alike."""
    yield from server_or_cluster(request)


def varied_log(store: RedisSkillbookStore) -> None:
    """Versions of every kind: import, apply, lifecycle, consolidation, decision, rollback; non-ASCII text."""
    book = Skillbook()
    for number in range(4):
        book.add_skill("größe" if number % 2 else "units", f"Skill {number}: „check“ the {number} units.")
    store.import_skillbook(book, source={"file": "seed.json"})  # v1
    ids = list(store.history(1)[0].after)
    store.apply(
        batch(
            add("Round late.", "units"),
            add("Round early.", "units"),
            tag(ids[0], helpful=2),
            update(ids[1], "Weigh twice."),
        )
    )  # v2
    added = [i for i in store.history(1)[0].after if i not in ids]
    store.apply(batch(remove(ids[2])), source={"actor": "user:ann"})  # v3
    store.pin([ids[3]], actor="user:ann", note="keep")  # v4
    store.archive([ids[0]], actor="user:ann")  # v5
    merge = MergeOp(keep_id=ids[1], merge_ids=[added[0]], merged_content="Weigh twice, then check.")
    store.apply_consolidation(ConsolidationBatch(operations=[merge, DeleteOp(skill_id=added[1])]))  # v6
    store.set_similarity_decision(ids[1], ids[3], SimilarityDecision("KEEP"))  # v7
    store.rollback(2, source={"actor": "user:bob"})  # v8


def raw_entries(client: redis.Redis, store: RedisSkillbookStore) -> list[Any]:
    return list(client.xrange(store.keys.changes))


def cut_to(record: ChangeRecord, skill_id: str) -> ChangeRecord | None:
    """The full record with its images cut to one skill; None when it did not touch it."""
    if skill_id not in record.before and skill_id not in record.after:
        return None
    only = {
        side: {skill_id: images[skill_id]} if skill_id in images else {}
        for side, images in (("before", record.before), ("after", record.after))
    }
    return replace(record, before=only["before"], after=only["after"])


def active_at(store: RedisSkillbookStore, version: int) -> tuple[int, int]:
    """Active skills and their content's characters at ``version``, read from its snapshot."""
    if version == 0:
        return 0, 0
    active = store.snapshot_at(version)[1].skills()
    return len(active), sum(len(skill.content) for skill in active)


# -- digests -------------------------------------------------------------------------------------


def test_the_digests_say_what_the_full_records_say(store: RedisSkillbookStore) -> None:
    varied_log(store)
    records = store.history(50)
    digests = store.change_digests(0, store.version())[::-1]
    assert [d.version for d in digests] == [r.version for r in records] == list(range(8, 0, -1))
    assert {d.kind for d in digests} >= {ChangeKind.IMPORT, ChangeKind.APPLY, ChangeKind.CONSOLIDATE}
    for record, digest in zip(records, digests, strict=True):
        shown = {"operations_not_shown": 0, "consolidation_not_shown": 0}
        assert digest.to_json() == {**change_to_json(record), **shown}, record.version
        assert digest.counts == operation_counts(record), record.version
        assert digest.effect == change_effect(record), record.version
        assert digest.effect_not_shown == {"added": 0, "removed": 0, "changed": 0}, record.version


def test_a_digests_growth_is_the_difference_of_the_snapshots_around_it(store: RedisSkillbookStore) -> None:
    varied_log(store)
    for digest in store.change_digests(0, store.version()):
        (count, chars), (before_count, before_chars) = (
            active_at(store, digest.version),
            active_at(store, digest.version - 1),
        )
        assert (digest.active_growth, digest.content_growth) == (count - before_count, chars - before_chars)


def test_a_digest_lists_the_first_skills_and_operations_and_counts_the_rest(
    store: RedisSkillbookStore,
) -> None:
    many = DIGEST_SHOWN + 7
    store.apply(batch(*(add(f"Skill number {n}.", "bulk") for n in range(many))))
    record = store.history(1)[0]
    digest = store.change_digests(0, 1)[0]
    assert digest.effect["added"] == change_effect(record)["added"][:DIGEST_SHOWN]
    assert digest.effect_totals == {"added": many, "removed": 0, "changed": 0}
    assert digest.effect_not_shown == {"added": 7, "removed": 0, "changed": 0}
    assert digest.operations == change_to_json(record)["operations"][:DIGEST_SHOWN]
    assert digest.to_json()["operations_not_shown"] == 7
    assert digest.counts == {"ADD": many}


def test_a_digest_cuts_a_consolidations_operations_too(store: RedisSkillbookStore) -> None:
    varied_log(store)
    record = next(r for r in store.history(50) if r.kind is ChangeKind.CONSOLIDATE)
    digest = digest_change(record, shown=1)
    assert digest.consolidation == record.consolidation[:1]
    assert digest.to_json()["consolidation_not_shown"] == len(record.consolidation) - 1 == 1


def test_the_extent_names_the_oldest_version_the_trimmed_log_holds(
    store: RedisSkillbookStore, redis_client: redis.Redis
) -> None:
    varied_log(store)
    assert store.changelog_extent()[::2] == (8, 1)
    redis_client.xtrim(store.keys.changes, maxlen=3)  # as ACE_CHANGELOG_MAXLEN trims, from the oldest end
    version, incarnation, oldest = store.changelog_extent()
    assert (version, oldest) == (8, 6) == (8, store.history(50)[-1].version)
    assert incarnation == store.cached_snapshot_of_incarnation()[1]
    assert [d.version for d in store.change_digests(0, 8)] == [6, 7, 8]  # the trimmed ones are missing


def test_the_extent_of_a_skillbook_never_written_holds_nothing(store: RedisSkillbookStore) -> None:
    assert store.changelog_extent() == (0, None, 1)


# -- one skill's part of an entry ----------------------------------------------------------------


def test_one_skills_part_of_every_entry_is_the_full_records_cut_to_it(
    store: RedisSkillbookStore, redis_client: redis.Redis
) -> None:
    varied_log(store)
    entries = raw_entries(redis_client, store)
    skill_ids = [*sorted({i for _, fields in entries for i in json.loads(fields[b"after"])}), "units-09999"]
    for _, fields in entries:
        record = decode_change(fields)
        for skill_id in skill_ids:
            expected = cut_to(record, skill_id)
            assert decode_change_of_skill(fields, skill_id) == expected, (record.version, skill_id)
            # As an entry of 100,000 images is read: the skill's values where its key stands.
            assert decode_change_of_skill(fields, skill_id, big=0) == expected, (record.version, skill_id)


def test_a_key_found_twice_nested_or_escaped_falls_back_to_the_whole_entry() -> None:
    # A value holding a skill's key (even with its id) before the skill's own entry; keys only inside.
    nested = {"b-00002": {"id": "b-00002", "content": "old"}, "c-00003": None, "d-00005": {"note": "n"}}
    image = {"id": "a-00001", "section": "a", "content": "x", "archive_info": nested}
    fields = encode_change(
        version=1,
        base_version=0,
        kind=ChangeKind.APPLY,
        time="t",
        batch_json="",
        before={"a-00001": None, "b-00002": None, "größe-00004": None, "e-00006": None},
        after={
            "e-00006": {"id": "e-00006", "section": "e", "content": "ü" * 100_000},  # past a first window
            "a-00001": image,
            "b-00002": {"id": "b-00002", "section": "a", "content": "y"},
            "größe-00004": {"id": "größe-00004", "section": "größe", "content": "z"},
        },
        source_json="null",
        idempotency_key=None,
    )
    record = decode_change(fields)
    for skill_id in ("a-00001", "b-00002", "c-00003", "größe-00004", "d-00005", "e-00006"):
        assert decode_change_of_skill(fields, skill_id, big=0) == cut_to(record, skill_id), skill_id
    # Written with ASCII escapes, a non-ASCII key is not where the search looks: read whole.
    escaped = {side: fields[side].replace("größe", "gr\\u00f6\\u00dfe") for side in ("before", "after")}
    as_escaped = {**fields, **escaped}
    expected = cut_to(decode_change(as_escaped), "größe-00004")
    assert expected is not None
    assert decode_change_of_skill(as_escaped, "größe-00004", big=0) == expected


def test_changes_touching_a_skill_are_historys_cut_to_it(store: RedisSkillbookStore) -> None:
    varied_log(store)
    for skill_id in store.history(50)[-1].after:
        expected = [cut for r in store.history(6) if (cut := cut_to(r, skill_id)) is not None]
        assert store.changes_touching(skill_id, limit=6) == expected, skill_id
        assert expected, skill_id  # each was touched in the last 6 versions (the rollback touches all)


def test_changes_touching_a_skill_of_a_big_import_read_its_part_alone(
    store: RedisSkillbookStore, redis_client: redis.Redis
) -> None:
    book = Skillbook()
    for number in range(3000):
        book.add_skill(f"s{number % 7}", f"When step {number} fails, „retry“ it once and note why: {number}.")
    store.import_skillbook(book)
    store.pin(["s0-00001"], actor="user:ann")
    (_, fields), _ = raw_entries(redis_client, store)
    assert len(fields[b"after"]) > BIG_IMAGES  # read as an import of 100,000 skills is
    records = store.history(2)
    for skill_id in ("s0-00001", "s3-01501", "s6-03000", "s6-03001"):
        expected = [cut for r in records if (cut := cut_to(r, skill_id)) is not None]
        assert store.changes_touching(skill_id, limit=2) == expected, skill_id


# -- digests stored beside big entries -----------------------------------------------------------


def big_import(store: RedisSkillbookStore, skills: int = STORED_DIGEST_CHANGES) -> None:
    """v1: an import touching ``skills`` skills, then v2: one small apply."""
    book = Skillbook()
    for number in range(skills):
        book.add_skill(f"s{number % 7}", f"When step {number} fails, „retry“ it once: {number}.")
    store.import_skillbook(book, source={"file": "big.json"})
    store.apply(batch(add("Round late.", "units")))


def test_every_kind_of_entrys_digest_reads_back_from_its_stored_json(store: RedisSkillbookStore) -> None:
    varied_log(store)
    for record in store.history(50):
        fields = encode_change(
            version=record.version,
            base_version=record.base_version,
            kind=record.kind,
            time=record.time,
            batch_json=json.dumps(
                {"reasoning": record.reasoning, "operations": record.consolidation}
                if record.consolidation
                else {
                    "reasoning": record.reasoning,
                    "operations": [op.model_dump() for op in record.operations],
                }
            ),
            before=record.before,
            after=record.after,
            source_json=json.dumps(record.source),
            idempotency_key=record.idempotency_key,
        )
        stored = stored_digest_json(fields, record.before, record.after)
        assert stored_digest_from_json(stored, record.version) == digest_change(record), record.version


def test_an_import_of_many_skills_stores_its_digest_and_a_small_apply_does_not(
    store: RedisSkillbookStore, redis_client: redis.Redis
) -> None:
    big_import(store)
    assert redis_client.hkeys(store.keys.change_digests) == [b"1"]
    entry_digest = digest_change(store.history(2)[-1])
    assert stored_digest_from_json(redis_client.hget(store.keys.change_digests, "1"), 1) == entry_digest
    assert store.change_digests(0, 2)[0] == entry_digest
    assert [d.version for d in store.change_digests(0, 2)] == [1, 2]
    assert store.change_digests(1, 2)[0] == digest_change(store.history(1)[0])


def test_a_stored_digest_that_does_not_read_back_is_passed_over_with_a_warning_naming_it(
    store: RedisSkillbookStore, redis_client: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    # Whatever an earlier test in this process did to logging levels, warnings of this module are seen.
    caplog.set_level(logging.WARNING, logger=digest_reads.__name__)
    big_import(store)
    expected = store.change_digests(0, 2)
    good = json.loads(redis_client.hget(store.keys.change_digests, "1"))
    for bad in ("{not json", "[]", json.dumps({**good, "version": 2}), json.dumps({**good, "effect": {}})):
        redis_client.hset(store.keys.change_digests, "1", bad)
        caplog.clear()
        assert store.change_digests(0, 2) == expected, bad
        warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
        assert len(warnings) == 1, bad
        assert f"{store.keys.change_digests} field 1:" in warnings[0], bad


def test_stored_digests_of_versions_trimmed_from_the_log_are_left_out_and_dropped(
    store: RedisSkillbookStore, redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    big_import(store)
    store.apply(batch(add("Round early.", "units")))  # v3
    redis_client.xtrim(store.keys.changes, maxlen=2)  # v1, the import, trimmed
    assert [d.version for d in store.change_digests(0, 3)] == [2, 3]
    assert redis_client.hkeys(store.keys.change_digests) == [b"1"]  # kept while few are stored
    monkeypatch.setattr(digest_reads, "STORED_KEPT", 0)
    assert [d.version for d in store.change_digests(0, 3)] == [2, 3]
    assert redis_client.hkeys(store.keys.change_digests) == []


def test_deleting_a_skillbook_deletes_its_stored_digests(
    store: RedisSkillbookStore, redis_client: redis.Redis
) -> None:
    big_import(store)
    store.delete()
    assert redis_client.exists(store.keys.change_digests) == 0
