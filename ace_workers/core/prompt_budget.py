"""How many skills a prompt may carry, and which ones go in when a skillbook is bigger.

Every Agent and SkillManager call pays for the skillbook in tokens. Below its
budget the whole skillbook is shown, byte for byte as before; above it, the
skills most relevant to the task are shown (relevance from a scorer, ties
broken by helpful minus harmful votes, then skillbook order), listed in
skillbook order so sections stay together.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from .skill import Skill

__all__ = [
    "DEFAULT_PROMPT_BUDGET",
    "PromptBudget",
    "RelevanceScorer",
    "lexical_relevance",
    "select_within_budget",
    "text_words",
]

_WORD = re.compile(r"[a-z0-9]+")
# Words that say nothing about which skill fits a task.
_STOPWORDS = frozenset(
    _WORD.findall(
        "a an and are as at be by for from how if in into is it its of on or that the this to was "
        "what when which with you your"
    )
)


@dataclass(frozen=True)
class PromptBudget:
    """Upper bounds on the skillbook part of a prompt; None lifts a bound.

    ``max_chars`` counts the characters of the skills table (header, rows and
    the note saying how many were left out), not the rest of the prompt.
    """

    max_skills: int | None = 200
    max_chars: int | None = 40_000

    def __post_init__(self) -> None:
        for name in ("max_skills", "max_chars"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise ValueError(f"PromptBudget.{name} must be a positive int or None, got {value!r}")

    def fits(self, count: int, chars: int) -> bool:
        """True if ``count`` skills rendered in ``chars`` characters are within the budget."""
        return (self.max_skills is None or count <= self.max_skills) and (
            self.max_chars is None or chars <= self.max_chars
        )


# 200 skills of ~150 characters is ~30k characters (~8k tokens): a skillbook that
# size is shown whole, a bigger one costs the same as it does, whatever its size.
DEFAULT_PROMPT_BUDGET = PromptBudget()


class RelevanceScorer(Protocol):
    """Scores skills against a query text; higher is more relevant."""

    def __call__(self, query: str, skills: Sequence[Skill]) -> Sequence[float]:
        """One score per skill, in order."""
        ...


def text_words(text: str) -> frozenset[str]:
    """The words a text is found by: lower-cased, stop words left out."""
    return frozenset(w for w in _WORD.findall(text.lower()) if w not in _STOPWORDS)


def lexical_relevance(query: str, skills: Sequence[Skill]) -> list[float]:
    """The cheap scorer used when there is no embedder: shared words, rarer words weighing more."""
    wanted = text_words(query)
    shared = [text_words(skill.content) & wanted for skill in skills]
    document_frequency: dict[str, int] = {}
    for words in shared:
        for word in words:
            document_frequency[word] = document_frequency.get(word, 0) + 1
    weight = {w: math.log(1 + len(skills) / df) for w, df in document_frequency.items()}
    # Summed in word order: a set's order varies, and float sums with it (PromptIndex sums alike).
    return [sum(weight[w] for w in sorted(words)) for words in shared]


def select_within_budget(
    skills: Sequence[Skill],
    line_chars: Sequence[int],
    budget: PromptBudget,
    fixed_chars: int,
    query: str = "",
    scorer: RelevanceScorer | None = None,
) -> list[int]:
    """Indices (in skillbook order) of the skills to show within ``budget``.

    ``line_chars`` is each skill's rendered row length with its newline;
    ``fixed_chars`` what the table costs besides its rows (header and note).
    """
    scores = (scorer or lexical_relevance)(query, skills) if query else [0.0] * len(skills)
    order = sorted(
        range(len(skills)),
        key=lambda i: (-float(scores[i]), -(skills[i].helpful - skills[i].harmful), i),
    )
    room = budget.max_chars - fixed_chars if budget.max_chars is not None else math.inf
    limit = budget.max_skills if budget.max_skills is not None else len(skills)
    chosen: list[int] = []
    for index in order:
        if len(chosen) >= limit:
            break
        if line_chars[index] <= room:
            chosen.append(index)
            room -= line_chars[index]
    return sorted(chosen)
