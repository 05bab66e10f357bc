"""The consolidation call: the similarity report, the prompt around it, and the answer expected back.

The prompt opens with ``# Skill consolidation`` and lists pairs under
``## Similar pairs``, one ``### Pair`` block each; the simulated LLM in
:mod:`ace_workers.sim` reads it back by those headings, so keep them stable.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, Field, model_validator
from pydantic.json_schema import SkipJsonSchema

from ..core.consolidation import ConsolidationBatch, ConsolidationOp
from ..core.skill import Skill
from .detector import SimilarPair

__all__ = [
    "CONSOLIDATION_PROMPT",
    "ConsolidationResponse",
    "format_similarity_report",
    "older_first",
]

CONSOLIDATION_PROMPT = """\
# Skill consolidation
Date: {current_date}. Some skills of the skillbook look alike. Decide, pair by pair, whether \
they say the same thing.

## Similar pairs
{pairs}

## Instructions
- MERGE when both say the same thing: keep_id is the first (older) skill of the pair, \
merge_ids the other; merged_content is one sentence stating what both say. Votes are added \
up for you.
- KEEP when they differ in a way that matters: skill_ids are the pair's two ids, similarity \
as listed; say in reasoning what tells them apart.
- UPDATE (skill_id, new_content) when they overlap but one has something distinct: rewrite \
it so the difference is explicit. DELETE (skill_id) a skill that is wrong or redundant.
- At most one operation per pair. Use only ids listed above, and never name a skill an \
earlier operation merged away or deleted.
{feedback}
## Output
JSON {{"reasoning": str, "consolidation_operations": [{{"type": "MERGE"|"KEEP"|"UPDATE"|"DELETE", \
"keep_id", "merge_ids", "merged_content", "skill_ids", "similarity", "skill_id", "new_content", \
"reasoning"}}]}}
"""

FEEDBACK_TEMPLATE = "\n## Previous answer rejected\n{error}\nAnswer again, avoiding this.\n"


def older_first(a: Skill, b: Skill) -> tuple[Skill, Skill]:
    """The pair ordered by creation time, then id: the first is the one a merge keeps."""
    return (a, b) if (a.created_at, a.id) <= (b.created_at, b.id) else (b, a)


def _line(skill: Skill) -> str:
    content = " ".join(skill.content.split())
    return (
        f"- [{skill.id}] (section {skill.section}; helpful {skill.helpful}, harmful {skill.harmful}, "
        f"neutral {skill.neutral}) {content}"
    )


def format_similarity_report(pairs: Sequence[SimilarPair], skills: Mapping[str, Skill]) -> str:
    """The pairs as ``### Pair`` blocks, the older skill of each first."""
    blocks = []
    for number, pair in enumerate(pairs, start=1):
        first, second = older_first(skills[pair.id_a], skills[pair.id_b])
        blocks.append(f"### Pair {number}: similarity {pair.similarity:.3f}\n{_line(first)}\n{_line(second)}")
    return "\n\n".join(blocks)


class ConsolidationResponse(BaseModel):
    """Operations resolving the similar pairs: MERGE, KEEP, UPDATE or DELETE, at most one per pair.

    An empty list leaves every pair as it is (they will be reported again).
    """

    reasoning: str = Field(default="", description="The overall judgement, in a sentence or two.")
    consolidation_operations: list[ConsolidationOp] = Field(
        default_factory=list, description="One operation per pair that should change or be kept."
    )
    raw: SkipJsonSchema[dict[str, Any]] = Field(default_factory=dict, exclude=True)

    @model_validator(mode="before")
    @classmethod
    def _normalise_types(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("consolidation_operations"), list):
            ops = [
                {**op, "type": op["type"].strip().upper()}
                if isinstance(op, dict) and isinstance(op.get("type"), str)
                else op
                for op in data["consolidation_operations"]
            ]
            return {**data, "consolidation_operations": ops}
        return data

    def batch(self) -> ConsolidationBatch:
        """The operations as a batch to apply."""
        return ConsolidationBatch(reasoning=self.reasoning, operations=list(self.consolidation_operations))
