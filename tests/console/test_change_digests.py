"""The history timeline and the growth curves read change digests kept per version, against real Redis.

Each entry must say what the full change record says; an entry of many skills
lists the first DIGEST_SHOWN and counts the rest; each version is digested once
per process, and a skillbook deleted and created again never shows another's.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ace_workers.console.areas.change_digests import DEFAULT_CACHE, ChangeDigestCache
from ace_workers.distributed.service import Service
from ace_workers.distributed.store.change_digest import DIGEST_SHOWN
from ace_workers.distributed.store.change_summary import change_effect, change_to_json, operation_counts
from ace_workers.distributed.store.store import RedisSkillbookStore
from tests.support.console import RunningConsole, running_console
from tests.support.operations import add, batch, remove, tag

HISTORY = "/api/skillbooks/support/history"


@pytest.fixture
def served(idle_service: Service) -> Iterator[tuple[RunningConsole, RedisSkillbookStore]]:
    """Skillbook ``support`` at version 3, written here, and the console of its (worker-less) fleet."""
    store = idle_service.runtime.store("support")
    store.apply(batch(add("Check units.", "math"), add("Estimate first.", "math")))
    store.apply(batch(tag("math-00001", helpful=2)))
    store.apply(batch(remove("math-00002")))
    with running_console(idle_service) as running:
        yield running, store


def test_every_timeline_entry_says_what_its_full_change_record_says(
    console: RunningConsole, fleet: Service
) -> None:
    store = fleet.runtime.store("support")
    with console.client() as client:
        entries = client.get(HISTORY).json()["entries"]
    records = store.history(50)
    assert [entry["version"] for entry in entries] == [record.version for record in records]
    for entry, record in zip(entries, records, strict=True):
        assert {key: entry[key] for key in change_to_json(record)} == change_to_json(record)
        assert entry["counts"] == operation_counts(record)
        assert entry["effect"] == change_effect(record)
        assert (entry["operations_not_shown"], entry["consolidation_not_shown"]) == (0, 0)
        assert entry["effect_not_shown"] == {"added": 0, "removed": 0, "changed": 0}


def test_an_entry_of_many_skills_lists_the_first_and_counts_the_rest(idle_service: Service) -> None:
    store = idle_service.runtime.store("support")
    many = DIGEST_SHOWN + 5
    store.apply(batch(*(add(f"Skill number {n}.", "bulk") for n in range(many))))
    with running_console(idle_service) as running, running.client() as client:
        entry = client.get(HISTORY).json()["entries"][0]
        page = client.get("/skillbooks/support/history")
    record = store.history(1)[0]
    assert entry["counts"] == {"ADD": many}
    assert entry["effect"]["added"] == change_effect(record)["added"][:DIGEST_SHOWN]
    assert entry["effect_not_shown"] == {"added": 5, "removed": 0, "changed": 0}
    assert entry["operations"] == change_to_json(record)["operations"][:DIGEST_SHOWN]
    assert entry["operations_not_shown"] == 5
    assert page.text.count('class="added"') == DIGEST_SHOWN
    assert "and 5 more (5 added)" in page.text


def test_each_version_is_digested_once_per_process(
    served: tuple[RunningConsole, RedisSkillbookStore],
) -> None:
    running, store = served
    with running.client() as client:
        made = DEFAULT_CACHE.made
        client.get(HISTORY)
        first = DEFAULT_CACHE.made - made
        client.get(HISTORY)
        client.get("/api/skillbooks/support/evaluations")  # the curves read the same digests
        again = DEFAULT_CACHE.made - made - first
        store.apply(batch(add("Read twice.", "reading")))
        entries = client.get(HISTORY).json()["entries"]
        after_a_write = DEFAULT_CACHE.made - made - first - again
    assert (first, again, after_a_write) == (3, 0, 1)
    assert [entry["version"] for entry in entries] == [4, 3, 2, 1]


def test_a_skillbook_created_again_shows_its_own_history_not_the_cached_one(
    served: tuple[RunningConsole, RedisSkillbookStore],
) -> None:
    running, store = served
    with running.client() as client:
        client.get(HISTORY)
        store.delete()
        store.apply(batch(add("Start over.", "fresh")))
        entries = client.get(HISTORY).json()["entries"]
    assert [entry["version"] for entry in entries] == [1]
    assert [op["content"] for op in entries[0]["operations"]] == ["Start over."]


def test_a_cache_over_its_budget_forgets_its_least_recently_used_digests(
    served: tuple[RunningConsole, RedisSkillbookStore],
) -> None:
    _, store = served
    cache = ChangeDigestCache(budget=1)
    first = cache.recent(store, 50)
    again = cache.recent(store, 50)
    assert [d.version for d in again.digests] == [d.version for d in first.digests] == [3, 2, 1]
    assert cache.made == 3 + 2  # only the last one made (version 3) was kept: the others are made again
    assert cache.weight == again.digests[1].weight  # now only version 2's
