"""The skill index read model on a real Redis: built from a snapshot, brought forward by the change log."""

from __future__ import annotations

import gc
from typing import Any

import pytest

from ace_workers.core.skill import Skill
from ace_workers.core.updates import UpdateBatch, UpdateOperation
from ace_workers.distributed.store import SnapshotCache
from ace_workers.distributed.store.skill_index import FIELDS, Listing, SkillIndex, SkillIndexCache
from ace_workers.distributed.store.store import RedisSkillbookStore
from tests.support.catalogue import made_ids, seed_catalogue


@pytest.fixture
def catalogue(store: RedisSkillbookStore) -> RedisSkillbookStore:
    return seed_catalogue(store)


def active_skills(store: RedisSkillbookStore) -> list[Skill]:
    """The store's active skills in the order Skillbook.skills() gives (sections by their first skill)."""
    return list(store.export().skills())


def test_the_active_listing_holds_the_active_skills_in_the_skillbook_order(
    catalogue: RedisSkillbookStore,
) -> None:
    index = SkillIndexCache().index_of(catalogue)
    matches = index.find("active")
    assert [skill["id"] for skill in matches.page(1, 100)] == [s.id for s in active_skills(catalogue)]


def test_a_search_matches_any_case_and_counts_every_section_it_matches_in(
    catalogue: RedisSkillbookStore,
) -> None:
    index = SkillIndexCache().index_of(catalogue)
    refunds = [s for s in active_skills(catalogue) if "refund" in s.content.lower()]
    matches = index.find("active", q="rEFUND")
    assert [skill["id"] for skill in matches.page(1, 100)] == [s.id for s in refunds]
    counts: dict[str, int] = {}
    for skill in refunds:
        counts[skill.section] = counts.get(skill.section, 0) + 1
    assert dict(matches.sections) == counts


def test_a_search_through_the_joined_texts_finds_what_a_test_per_text_finds() -> None:
    texts = ["a-1\nretry once", "b-2\nnote why", "c-3\nretry, retry", "d-4\n\0odd", "e-5\nonce"]
    listing = Listing.of_runs({"s": (list(range(len(texts))), texts)})
    # Across two texts ("once" + "b-2"), twice in one, in the last one, holding the separator, none.
    for needle in ("onceb", "retry", "e\nonce", "once", "\0odd", "\n", "zzz", "-"):
        expected = [place for place, text in enumerate(texts) if needle in text]
        assert listing.places_holding(needle) == expected, needle


def test_a_section_filter_keeps_the_counts_of_every_section(catalogue: RedisSkillbookStore) -> None:
    index = SkillIndexCache().index_of(catalogue)
    shipping = index.find("active", q="refund", section="shipping")
    assert {skill["section"] for skill in shipping.page(1, 100)} == {"shipping"}
    assert shipping.sections == index.find("active", q="refund").sections


def test_pages_split_a_listing_and_together_hold_it_all(catalogue: RedisSkillbookStore) -> None:
    matches = SkillIndexCache().index_of(catalogue).find("all")
    pages = [matches.page(number, 7) for number in range(1, matches.total // 7 + 2)]
    assert [len(page) for page in pages[:-1]] == [7] * (len(pages) - 1)
    assert [skill["id"] for page in pages for skill in page] == [
        skill["id"] for skill in matches.page(1, matches.total)
    ]


def test_an_unchanged_version_is_served_from_the_cache(catalogue: RedisSkillbookStore) -> None:
    cache = SkillIndexCache()
    first = cache.index_of(catalogue)
    assert cache.index_of(catalogue) is first
    assert (cache.built, cache.advanced) == (1, 0)


def test_the_least_recently_used_skillbook_is_forgotten(
    catalogue: RedisSkillbookStore, redis_client: Any
) -> None:
    other = RedisSkillbookStore(redis_client, "other", snapshot_cache=SnapshotCache())
    other.apply(UpdateBatch(operations=[UpdateOperation(type="ADD", section="s", content="Say hello.")]))
    cache = SkillIndexCache(maxsize=1)
    cache.index_of(catalogue)
    cache.index_of(other)
    cache.index_of(catalogue)
    assert cache.built == 3


def test_a_cache_of_no_indexes_is_refused() -> None:
    with pytest.raises(ValueError, match="maxsize must be at least 1, got 0"):
        SkillIndexCache(maxsize=0)


def test_the_index_is_brought_forward_through_new_versions_as_a_new_build_would_make_it(
    catalogue: RedisSkillbookStore,
) -> None:
    cache = SkillIndexCache()
    cache.index_of(catalogue)
    ids = made_ids(catalogue)
    catalogue.apply(
        UpdateBatch(
            operations=[
                UpdateOperation(type="ADD", section="returns", content="Take returns back within 30 days."),
                UpdateOperation(type="ADD", section="loyalty", content="Thank repeat customers by name."),
                UpdateOperation(type="UPDATE", skill_id=ids[1], content="Rule 1, rewritten: check twice."),
                UpdateOperation(type="TAG", skill_id=ids[2], metadata={"helpful": 3}),
                UpdateOperation(type="REMOVE", skill_id=ids[5]),
                UpdateOperation(
                    type="ADD", section="billing", content="A skill deleted in the same version."
                ),
            ]
        )
    )
    doomed = next(s.id for s in catalogue.export().skills() if s.content.startswith("A skill deleted"))
    catalogue.apply(UpdateBatch(operations=[UpdateOperation(type="REMOVE", skill_id=doomed)]))
    catalogue.restore([ids[3]], actor="user:test")
    # Shipping's first active skill goes, returns' comes back: returns now comes before shipping.
    catalogue.archive([ids[1]], actor="user:test")
    advanced = cache.index_of(catalogue)
    _, view = catalogue.cached_snapshot()
    built = SkillIndex.build(advanced.version, view.skill_columns(FIELDS))
    assert (cache.built, cache.advanced) == (1, 1)
    assert list(advanced.listings["active"].spans) == ["billing", "returns", "shipping", "loyalty"]
    assert _listings(advanced) == _listings(built)
    assert advanced.counts == built.counts


def _listings(index: SkillIndex) -> dict[str, Any]:
    """What each listing of ``index`` shows: its skills in order, section runs, search texts."""
    return {
        status: (
            [index.skill(position) for position in listing.positions],
            {section: end - start for section, (start, end) in listing.spans.items()},
            listing.texts,
        )
        for status, listing in index.listings.items()
    }


def test_the_index_is_built_anew_after_a_rollback(catalogue: RedisSkillbookStore) -> None:
    cache = SkillIndexCache()
    first = cache.index_of(catalogue)
    catalogue.rollback(1)
    again = cache.index_of(catalogue)
    assert (cache.built, cache.advanced) == (2, 0)
    assert again.counts["active"] == 36 != first.counts["active"]


def test_a_cache_that_freezes_moves_what_is_alive_out_of_the_collectors_reach_after_a_big_build(
    catalogue: RedisSkillbookStore,
) -> None:
    skills = len(SkillIndexCache().index_of(catalogue).texts)
    try:
        gc.unfreeze()
        SkillIndexCache(freeze_from=skills + 1).index_of(catalogue)
        assert gc.get_freeze_count() == 0  # smaller than freeze_from: left alone
        SkillIndexCache(freeze_from=skills).index_of(catalogue)
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()  # the rest of the session collects as usual
