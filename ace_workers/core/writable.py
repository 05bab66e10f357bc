"""What a step that writes the skillbook holds: an in-memory Skillbook, or a store-backed writer."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from .consolidation import ConsolidationBatch, ConsolidationOp, ConsolidationReport
from .prompt_budget import PromptBudget, RelevanceScorer
from .skill import SimilarityDecision, Skill
from .skillbook import ApplyReport
from .updates import UpdateBatch

__all__ = ["WritableSkillbook"]


@runtime_checkable
class WritableSkillbook(Protocol):
    """The skillbook API writer steps and deduplication use; Skillbook satisfies it.

    In a worker the object is a ``StoreBackedSkillbook``: reads come from the
    store's current snapshot and every write is one store transaction.
    """

    # -- reads --------------------------------------------------------------------------
    def get_skill(self, skill_id: str) -> Skill | None:
        """A copy of one skill, or None."""
        ...

    def skills(self, include_invalid: bool = False) -> list[Skill]:
        """Copies of the skills, in prompt order."""
        ...

    def sections(self) -> list[str]:
        """Sections holding active skills."""
        ...

    def stats(self) -> dict[str, Any]:
        """Skill and tag counts."""
        ...

    def to_dict(self) -> dict[str, Any]:
        """The file format."""
        ...

    def dumps(self) -> str:
        """The file format as a JSON string."""
        ...

    def save_to_file(self, path: str | os.PathLike[str]) -> None:
        """Write the file format atomically."""
        ...

    def as_prompt(
        self, budget: PromptBudget | None = None, query: str = "", scorer: RelevanceScorer | None = None
    ) -> str:
        """The skills as a prompt table."""
        ...

    def as_markdown(self) -> str:
        """The skills as markdown."""
        ...

    def keep_pairs(self) -> list[tuple[str, str]]:
        """Every pair judged distinct (KEEP)."""
        ...

    def get_similarity_decision(self, id_a: str, id_b: str) -> SimilarityDecision | None:
        """The decision recorded for a pair, if any."""
        ...

    def has_keep_decision(self, id_a: str, id_b: str) -> bool:
        """True if the pair was judged distinct (KEEP)."""
        ...

    def __len__(self) -> int: ...

    # -- writes -------------------------------------------------------------------------
    def apply_update(self, batch: UpdateBatch) -> ApplyReport:
        """Apply a SkillManager's batch, all or nothing."""
        ...

    def apply_consolidation(
        self, operations: ConsolidationBatch | Iterable[ConsolidationOp]
    ) -> ConsolidationReport:
        """Apply deduplication operations, all or nothing."""
        ...

    def add_skill(
        self,
        section: str,
        content: str,
        skill_id: str | None = None,
        *,
        justification: str = "",
        evidence: str = "",
        sources: list[dict[str, Any]] | None = None,
    ) -> Skill:
        """Add a skill (or find the active one of its section that already says it)."""
        ...

    def update_skill(
        self, skill_id: str, content: str, *, justification: str = "", evidence: str = ""
    ) -> Skill:
        """Replace a skill's content."""
        ...

    def tag_skill(
        self, skill_id: str, tag: str, increment: int = 1, *, source: dict[str, Any] | None = None
    ) -> Skill:
        """Add to one of a skill's counters."""
        ...

    def remove_skill(self, skill_id: str, *, soft: bool = False) -> None:
        """Remove a skill."""
        ...

    def set_embeddings(self, embeddings: Mapping[str, tuple[str, Sequence[float]]]) -> int:
        """Keep computed embeddings where this skillbook keeps them; return how many were kept."""
        ...

    def set_similarity_decision(self, id_a: str, id_b: str, decision: SimilarityDecision) -> None:
        """Record a decision about a pair of skills."""
        ...
