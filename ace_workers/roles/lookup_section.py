"""What the SkillManager looks up before it decides: the skills and pending proposals like each learning.

Each learning is its own query: the budgeted slice was chosen for the whole
reflection (its diagnosis, the question, the feedback), while a restated skill
is found by what the learning says. Skills come from the skillbook's prompt
index (core/skillbook.py ``most_relevant``), so a lookup costs the query words'
postings, not a pass over the skills.
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..core.prompt_budget import RelevanceScorer, text_words
from ..core.skill import Skill
from ..core.skill_lookup import PendingOperation
from ..core.skillbook import PROMPT_COLUMNS
from ..core.toon import encode_table, first_cells
from ..protocols import SkillbookLike

__all__ = [
    "ADDITION_COLUMNS",
    "PENDING_COLUMNS",
    "being_added_section",
    "lookup_section",
    "pending_table",
    "related_pending",
    "similar_skills",
    "skills_table",
]

PENDING_COLUMNS = ("proposal", "type", "section", "skill_id", "content")
ADDITION_COLUMNS = ("type", "section", "content")

_SKILLS_NOTE = (
    "These existing skills are not in the Skillbook table above; they are the ones most like this "
    "reflection's learnings. A learning one of them states is a TAG of it (metadata "
    '{"helpful": 1}), or an UPDATE where the learning refines it: never an ADD.'
)
_PENDING_NOTE = (
    "These operations wait for a reviewer. A learning one of them states: repeat that operation "
    "exactly (type, section, skill id and content as shown), which counts as more evidence for it; "
    "never a reworded one."
)

_BEING_ADDED_NOTE = (
    "Other learners decided to add these skills a moment ago; they are not in the skillbook yet. "
    "A learning one of them states: repeat that ADD exactly (section and content as shown), which "
    "adds the skill once; never a reworded one. Decide every learning again."
)


def similar_skills(
    skillbook: SkillbookLike,
    learnings: Sequence[str],
    k: int,
    scorer: RelevanceScorer | None = None,
    *,
    table: str = "",
) -> list[Skill]:
    """Up to ``k`` skills most like the learnings and not in ``table``; each learning's best first."""
    shown = _Shown(table)
    per_learning = []
    for learning in dict.fromkeys(learnings):
        found = skillbook.most_relevant(learning, k, scorer, exclude=shown)
        shown.found.update(skill.id for skill in found)
        per_learning.append(found)
    # Round robin, so a second learning's best is not crowded out by the first's tail.
    chosen: list[Skill] = []
    for rank in range(k):
        chosen += [found[rank] for found in per_learning if rank < len(found)]
    return chosen[:k]


@dataclass
class _Shown:
    """The skills the prompt shows already: the rows of its skills table, and those looked up so far."""

    table: str
    found: set[str] = field(default_factory=set)

    @functools.cached_property
    def in_table(self) -> set[str]:
        # Read once, when the first candidate is checked: a lookup that finds nothing never reads it.
        return first_cells(self.table)

    def __contains__(self, skill_id: object) -> bool:
        return skill_id in self.found or skill_id in self.in_table


def related_pending(
    pending: Sequence[PendingOperation], learnings: Sequence[str], k: int
) -> list[PendingOperation]:
    """Up to ``k`` pending operations most like a learning, best first; those sharing no word are left out.

    Shared words weigh by how rare they are among the operations (as lexical_relevance
    weighs them among skills): a topic's name outweighs "input" or "questions", which
    every lesson of a task family says.
    """
    wanted = [text_words(learning) for learning in learnings]
    words = [_content_words(operation.content) for operation in pending]
    frequency = Counter(word for found in words for word in found)
    weight = {word: math.log(1 + len(pending) / count) for word, count in frequency.items()}
    scored = []
    for position, (operation, found) in enumerate(zip(pending, words, strict=True)):
        # Summed in word order: a set's order varies, and float sums with it.
        score = max((sum(weight[w] for w in sorted(found & learning)) for learning in wanted), default=0.0)
        if score > 0:
            scored.append((-score, position, operation))
    return [operation for _, _, operation in sorted(scored, key=lambda item: item[:2])[:k]]


@functools.lru_cache(maxsize=4096)
def _content_words(content: str) -> frozenset[str]:
    # A proposal waits for days and is read at every decision meanwhile: its words are split once.
    return text_words(content)


def skills_table(skills: Sequence[Skill]) -> str:
    """The skills as the Skillbook table shows skills (same columns)."""
    return encode_table("skills", PROMPT_COLUMNS, [[getattr(s, c) for c in PROMPT_COLUMNS] for s in skills])


def pending_table(pending: Sequence[PendingOperation]) -> str:
    """Pending operations as a table, each with its proposal's id."""
    rows = [[op.proposal_id, op.type, op.section, op.skill_id, op.content] for op in pending]
    return encode_table("proposals", PENDING_COLUMNS, rows)


def lookup_section(skills: Sequence[Skill], pending: Sequence[PendingOperation]) -> str:
    """The prompt's lookup sections (a blank line before each heading); "" when nothing was found."""
    if not skills and not pending:
        return ""
    parts = []
    if skills:
        parts.append(f"\n## Similar skills\n{skills_table(skills)}\n{_SKILLS_NOTE}\n")
    if pending:
        parts.append(f"\n## Pending proposals\n{pending_table(pending)}\n{_PENDING_NOTE}\n")
    return "".join(parts)


def being_added_section(additions: Sequence[PendingOperation]) -> str:
    """The prompt section showing ADDs other decisions are making (a blank line before its heading)."""
    rows = [[op.type, op.section, op.content] for op in additions]
    return f"\n## Being added\n{encode_table('additions', ADDITION_COLUMNS, rows)}\n{_BEING_ADDED_NOTE}\n"
