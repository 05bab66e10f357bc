"""The prompt index gives exactly the table a full scan gives, built whole or derived version by version."""

from __future__ import annotations

import random
from typing import Any

import pytest

from ace_workers.core import PromptBudget, Skillbook
from ace_workers.core.prompt_index import PromptIndex
from ace_workers.core.skillbook import PROMPT_COLUMNS

WORDS = [f"w{index}" for index in range(40)] + ["check", "units", "first", "always"]
SECTIONS = ["math", "units", "style", "tools"]
BUDGETS = [
    PromptBudget(max_skills=5, max_chars=None),
    PromptBudget(max_skills=None, max_chars=400),
    PromptBudget(max_skills=8, max_chars=600),
    PromptBudget(max_skills=3, max_chars=120),  # tight: rows get skipped for room
]


def text(rng: random.Random) -> str:
    # Common words ("check", "first") shared by many skills make many equal scores.
    return " ".join(rng.choices(WORDS, k=rng.randint(2, 9)))


def random_book(rng: random.Random, size: int) -> Skillbook:
    book = Skillbook()
    for _ in range(size):
        skill = book.add_skill(rng.choice(SECTIONS), text(rng))
        if rng.random() < 0.4:
            book.tag_skill(skill.id, rng.choice(["helpful", "harmful"]), rng.randint(1, 3))
    return book


def queries(rng: random.Random) -> list[str]:
    return ["", "nothing in common", "check first", *(text(rng) for _ in range(4))]


def assert_same_as_a_scan(book: Skillbook, rng: random.Random) -> None:
    for budget in BUDGETS:
        for query in queries(rng):
            assert book.as_prompt(budget, query) == book._scanned_prompt(budget, query, None), (budget, query)


@pytest.mark.parametrize("seed", range(12))
def test_a_built_index_cuts_the_table_exactly_as_scanning_every_skill_does(seed: int) -> None:
    rng = random.Random(seed)
    book = random_book(rng, rng.randint(0, 60))
    book.remove_skill(book.skills()[0].id, soft=True) if len(book) > 3 else None
    scanned_stats = book.stats()
    assert_same_as_a_scan(book, rng)
    assert book._index is not None  # the budgeted prompts went through the index
    assert book.stats() == scanned_stats


def image(skill_id: str, section: str, content: str, helpful: int = 0, harmful: int = 0) -> dict[str, Any]:
    return {
        "id": skill_id,
        "section": section,
        "content": content,
        "helpful": helpful,
        "harmful": harmful,
        "neutral": 0,
        "status": "active",
    }


def random_changes(rng: random.Random, book: Skillbook, next_number: int) -> tuple[dict[str, Any], int]:
    """One version's after-images: adds, content and section changes, votes, removals, re-adds."""
    ids = [skill.id for skill in book.skills(include_invalid=True)]
    changes: dict[str, Any] = {}
    for _ in range(rng.randint(1, 6)):
        kind = rng.random()
        if kind < 0.35 or not ids:
            changes[f"new-{next_number:05d}"] = image(
                f"new-{next_number:05d}", rng.choice(SECTIONS), text(rng), rng.randint(0, 3)
            )
            next_number += 1
        elif kind < 0.55:
            changes[rng.choice(ids)] = None
        elif kind < 0.7:
            skill_id = rng.choice(ids)
            status = rng.choice(["invalid", "archived"])  # kept, out of the prompt, counted apart
            changes[skill_id] = {**image(skill_id, rng.choice(SECTIONS), text(rng)), "status": status}
        else:
            skill_id = rng.choice(ids)
            changes[skill_id] = image(
                skill_id, rng.choice(SECTIONS), text(rng), rng.randint(0, 6), rng.randint(0, 6)
            )
    return changes, next_number


@pytest.mark.parametrize("seed", range(12))
def test_an_index_derived_version_after_version_matches_one_built_from_scratch(seed: int) -> None:
    rng = random.Random(100 + seed)
    book = random_book(rng, rng.randint(0, 40))
    book.as_prompt(BUDGETS[0], "check")  # builds the index the versions derive from
    next_number = 1
    for version in range(25):
        batches = []
        for _ in range(rng.randint(1, 3)):  # a refresh may cover several versions at once
            changes, next_number = random_changes(rng, book, next_number)
            batches.append(changes)
            # A skill removed and re-added within one refresh goes to the end.
            if rng.random() < 0.2 and batches[-1]:
                gone = next(iter(batches[-1]))
                batches.append({gone: None})
                batches.append({gone: image(gone, "tools", text(rng))})
        book = book.with_changes(batches, next_id=1000, order_of_new=lambda skill_id: skill_id)
        assert book._index is not None, "a derived snapshot keeps an index"
        fresh = Skillbook.from_dict(book.to_dict())
        assert len(book) == len(fresh), version
        assert book.stats() == fresh.stats(), version  # kept by the index, counted by the scan
        for budget in BUDGETS:
            for query in queries(rng):
                derived = book.as_prompt(budget, query)
                assert derived == fresh._scanned_prompt(budget, query, None), (version, budget, query)


def test_a_write_drops_the_index_so_a_prompt_never_shows_a_stale_row() -> None:
    book = Skillbook()
    first = book.add_skill("math", "check units first")
    for index in range(10):
        book.add_skill("math", f"rule {index} about units")
    budget = PromptBudget(max_skills=3)
    before = book.as_prompt(budget, "units")
    book.tag_skill(first.id, "helpful", 5)
    book.update_skill(first.id, "always check units first")
    after = book.as_prompt(budget, "units")
    assert "always check units first\t5\t0\t0" in after
    assert after != before
    assert after == book._scanned_prompt(budget, "units", None)


def test_the_index_holds_the_rendered_rows_and_counts_active_skills_only() -> None:
    book = Skillbook()
    kept = book.add_skill("math", "keep me")
    gone = book.add_skill("math", "invalid one")
    book.remove_skill(gone.id, soft=True)
    index = PromptIndex.build(book._skills, PROMPT_COLUMNS)
    assert index.count == 1
    assert index.lines[index.slot_of[kept.id]] == f"  {kept.id}\tmath\tkeep me\t0\t0\t0"
    assert index.lines[index.slot_of[gone.id]] == ""
