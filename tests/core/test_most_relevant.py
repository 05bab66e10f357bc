"""Skillbook.most_relevant: the k best by shared words, found from the query words' postings only."""

from __future__ import annotations

import random

from ace_workers.core import Skillbook, lexical_relevance


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
