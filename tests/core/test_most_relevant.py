"""Skillbook.most_relevant: the k best by shared words, found from the query words' postings only."""

from __future__ import annotations

import random

from ace_workers.core import Skillbook, lexical_relevance
from ace_workers.core.skill_ids import format_skill_id


def random_skillbook(size: int, seed: int = 5) -> Skillbook:
    """Skills of 8 random words of 300, and "check" in every one (a word too common to find skills by)."""
    rng = random.Random(seed)
    words = [f"word{n}" for n in range(300)]
    book = Skillbook()
    for number in range(size):
        skill = book.add_skill(f"s{number % 7}", " ".join(["check", *rng.choices(words, k=8)]))
        if number % 4 == 0:
            book.tag_skill(skill.id, "helpful", rng.randint(1, 3))
    return book


def scanned_best(book: Skillbook, query: str, k: int, exclude: set[str]) -> list[str]:
    """The same choice by scoring every skill: score, then votes, then the older."""
    skills = book.skills()
    order = {s.id: n for n, s in enumerate(sorted(skills, key=lambda s: int(s.id.rsplit("-", 1)[1])))}
    scores = lexical_relevance(query, skills)
    ranked = sorted(
        ((round(score, 9), skill) for score, skill in zip(scores, skills, strict=True) if score > 0),
        key=lambda pair: (-pair[0], -(pair[1].helpful - pair[1].harmful), order[pair[1].id]),
    )
    return [skill.id for _, skill in ranked if skill.id not in exclude][:k]


def test_the_postings_choose_what_scoring_every_skill_chooses() -> None:
    book = random_skillbook(2_000)
    rng = random.Random(9)
    for _ in range(20):
        query = " ".join(["check", *(f"word{rng.randrange(300)}" for _ in range(6))])
        excluded = {s.id for s in book.most_relevant(query, 5)}
        assert [s.id for s in book.most_relevant(query, 8)] == scanned_best(book, query, 8, set())
        found = [s.id for s in book.most_relevant(query, 8, exclude=excluded)]
        assert found == scanned_best(book, query, 8, excluded)


def test_removed_skills_and_skills_sharing_no_word_are_never_found() -> None:
    book = Skillbook()
    kept = book.add_skill("a", "alpha beta")
    gone = book.add_skill("a", "alpha gamma")
    book.add_skill("a", "delta epsilon")
    book.remove_skill(gone.id)
    assert [s.id for s in book.most_relevant("alpha", 8)] == [kept.id]
    assert book.most_relevant("zeta", 8) == []
    assert [s.id for s in book.most_relevant("epsilon", 8)] == [s.id for s in book.skills()][-1:]


def test_derived_versions_whose_postings_are_out_of_slot_order_still_find_the_best() -> None:
    # An edited skill keeps its slot but joins its new words' postings at their end, so a
    # version derived from another holds postings out of slot order; new skills get new slots.
    book = random_skillbook(600)
    rng = random.Random(11)
    words = [f"word{n}" for n in range(300)]
    book.most_relevant("check word1", 5)  # builds the index the versions derive from
    next_number = 601
    for _ in range(12):
        skills = book.skills()
        changes: dict[str, dict[str, object] | None] = {}
        for skill in rng.sample(skills, 8):
            edited = skill.to_dict()
            edited["content"] = " ".join(["check", *rng.choices(words, k=8)])
            changes[skill.id] = edited
        for skill in rng.sample(skills, 2):
            changes.setdefault(skill.id, None)
        for _ in range(3):
            added = skills[0].to_dict()
            added.update(id=format_skill_id("s0", next_number), helpful=rng.randint(0, 3), harmful=0)
            added["content"] = " ".join(["check", *rng.choices(words, k=8)])
            changes[added["id"]] = added
            next_number += 1
        book = book.with_changes([changes], next_id=next_number, order_of_new=lambda skill_id: skill_id)
        assert book._index is not None, "a derived snapshot keeps an index"
        for _ in range(5):
            query = " ".join(["check", *(f"word{rng.randrange(300)}" for _ in range(6))])
            assert [s.id for s in book.most_relevant(query, 8)] == scanned_best(book, query, 8, set())
