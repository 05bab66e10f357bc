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


def test_a_large_index_cuts_exactly_as_a_scan_from_its_kept_tie_order_and_past_it() -> None:
    # More active skills than the tie order keeps: budgets met within it, rows skipped past
    # it (tight room), and query words held by too many skills for the postings to pay.
    rng = random.Random(7)
    book = random_book(rng, 2500)
    budgets = [
        PromptBudget(),
        PromptBudget(max_skills=5, max_chars=None),
        PromptBudget(max_skills=60, max_chars=1500),
    ]
    for budget in budgets:
        for query in ["", "nothing in common", "w1", "w2 w3", "check first", text(rng), text(rng)]:
            assert book.as_prompt(budget, query) == book._scanned_prompt(budget, query, None), (budget, query)
    kept = book._prompt_index().tie_prefix
    assert kept is not None
    assert len(kept) < len(book), "the tie order was kept in part"


def test_rows_skipped_for_room_leave_places_for_short_skills_past_the_kept_tie_order() -> None:
    book = Skillbook()
    for number in range(1100):
        book.add_skill("math", f"rule {number:04d} about units and where they go in the sum")
    short = [book.add_skill("math", "ok").id for _ in range(5)]  # last in the tie order
    shown_short = False
    for max_chars in range(1500, 1600, 9):  # some leave room for a short row, not a long one
        budget = PromptBudget(max_skills=200, max_chars=max_chars)
        for query in ["", "rule 0001"]:
            prompt = book.as_prompt(budget, query)
            assert prompt == book._scanned_prompt(budget, query, None), (max_chars, query)
            shown_short = shown_short or any(skill_id in prompt for skill_id in short)
    assert shown_short, "no budget left room for a short skill past the long ones"


def tie_order_ids(book: Skillbook) -> list[str | None]:
    """Every active skill's id by votes, then skillbook order: the order of skills sharing no query word."""
    index = book._prompt_index()
    return [index.ids[slot] for slot in index._tie_order(index.count).tolist()]


def test_a_derived_version_follows_the_kept_tie_order_as_a_fresh_index_orders_it() -> None:
    rng = random.Random(11)
    book = random_book(rng, 2500)
    book.as_prompt(PromptBudget(), "check")  # keeps a part of the tie order
    next_number, followed = 1, 0
    for version in range(8):
        changes, next_number = random_changes(rng, book, next_number)
        book = book.with_changes([changes], next_id=5000, order_of_new=lambda skill_id: skill_id)
        index = book._prompt_index()
        fresh = Skillbook.from_dict(book.to_dict())
        if index.tie_prefix is not None:
            followed += 1
            kept = [index.ids[slot] for slot in index.tie_prefix.tolist()]
            assert kept == tie_order_ids(fresh)[: len(kept)], version
        for query in ["", "w1 w2", text(rng)]:
            assert book.as_prompt(PromptBudget(), query) == fresh._scanned_prompt(PromptBudget(), query, None)
    assert followed >= 6, "most versions follow the kept tie order rather than partition again"


def test_when_a_sections_first_skill_goes_its_others_move_behind_the_next_section() -> None:
    book = Skillbook()
    first = book.add_skill("a", "the first rule").id
    for number in range(2400):
        book.add_skill("b" if number % 2 == 0 else "a", f"rule {number}")
    book.as_prompt(PromptBudget(), "")  # keeps the first of the tie order: the a's, then some b's
    book = book.with_changes([{first: None}], next_id=5000, order_of_new=lambda skill_id: skill_id)
    index = book._prompt_index()
    fresh = tie_order_ids(Skillbook.from_dict(book.to_dict()))
    followed = index.tie_prefix  # None: worked out anew by the next call
    assert followed is None or [index.ids[slot] for slot in followed.tolist()] == fresh[: len(followed)]
    kept = [index.ids[slot] for slot in index._tie_order(1024).tolist()]
    assert kept == fresh[: len(kept)]
    assert book.get_skill(str(kept[0])).section == "b", "the b's come first now"


def test_a_word_every_skill_holds_ties_them_all_and_the_kept_tie_order_breaks_the_tie() -> None:
    rng = random.Random(5)
    book = Skillbook()
    for _ in range(2500):
        skill = book.add_skill(rng.choice(SECTIONS), f"always {text(rng)}")
        if rng.random() < 0.4:
            book.tag_skill(skill.id, rng.choice(["helpful", "harmful"]), rng.randint(1, 3))
    for budget in [PromptBudget(), PromptBudget(max_skills=40, max_chars=2000)]:
        for query in ["always", "always w1", "always check w2 w3"]:
            assert book.as_prompt(budget, query) == book._scanned_prompt(budget, query, None), (budget, query)
