"""The skillbook writer of a worker: reads come from the store's snapshot, writes go to the store.

Writer steps (TagStep, ApplyStep, CheckpointStep, ...) receive one of these in
a worker instead of an in-memory Skillbook, so the same step classes write
through the versioned, idempotent store without knowing it. It is not a
Skillbook: it holds no skills of its own, only the current snapshot's view.
"""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...core.consolidation import ConsolidationBatch, ConsolidationOp, ConsolidationReport
from ...core.context import SkillbookView
from ...core.files import write_text_atomically
from ...core.prompt_budget import PromptBudget, RelevanceScorer
from ...core.skill import SimilarityDecision, Skill
from ...core.skillbook import ApplyReport
from ...core.updates import UpdateBatch, UpdateOperation
from ...errors import PinnedSkillError, SkillTooLongError, UnknownSkillError
from .errors import SkillbookFullError
from .review_policy import CONSOLIDATE, REVIEW, split_batch
from .write_scope import current_write_scope

if TYPE_CHECKING:
    from .store import RedisSkillbookStore, StoreApplyResult

__all__ = ["StoreBackedSkillbook"]

logger = logging.getLogger(__name__)


class StoreBackedSkillbook:
    """The skillbook API (:class:`~ace_workers.core.WritableSkillbook`) over a RedisSkillbookStore.

    Every read first brings the view up to the store's current version (one
    GET when nothing changed) and reads the shared snapshot through it; every
    write is one store transaction whose idempotency key comes from the
    current write scope. Under a review policy (review.py) the operations it
    reviews are stored as a proposal instead, with the same key.
    """

    def __init__(self, store: RedisSkillbookStore) -> None:
        self.store = store
        self.version = -1
        self.last_result: StoreApplyResult | Any = None
        self._view: SkillbookView | None = None

    @property
    def name(self) -> str:
        """The skillbook's name in Redis."""
        return self.store.name

    def refresh(self) -> int:
        """Load the store's current version if it moved; return that version."""
        self.view()
        return self.version

    def view(self) -> SkillbookView:
        """The read-only view of the store's current version."""
        return self.current()[1]

    def current(self, head: Sequence[Any] | None = None) -> tuple[int, SkillbookView]:
        """The store's current version and its view, read together (one read when nothing changed).

        The object is shared by a worker's threads: a caller that needs both takes them from here,
        not from ``version`` after ``view()``, which another thread may have moved in between.
        ``head``: the version and incarnation read already (see RedisSkillbookStore.cached_snapshot).
        """
        version, view = self.store.cached_snapshot(head)
        self.version, self._view = version, view
        return version, view

    # -- writes: one store transaction each ------------------------------------------
    def apply_update(self, batch: UpdateBatch) -> ApplyReport:
        """Apply ``batch`` atomically in Redis, effectively once per write scope."""
        scope = current_write_scope()
        key = scope.next_key() if scope is not None else f"adhoc:{uuid.uuid4().hex}"
        source = scope.source if scope is not None else None
        base_version = scope.base_version if scope is not None else None
        # The policy is read in the apply's own transaction: a batch it reviews nothing of applies there.
        result = self.store.apply_unless_reviewed(
            batch, base_version=base_version, idempotency_key=key, source=source
        )
        if result is None:
            policy = self.store.review.policy()
            # The reviewed operations wait as a proposal (stored once per key), the rest apply now.
            batch, reviewed = split_batch(policy, batch)
            if reviewed.operations:
                self.store.review.propose_update(
                    reviewed,
                    idempotency_key=key,
                    source=source,
                    auto_approve_after=policy.auto_approve_after,
                    reject_duplicates=policy.duplicates == "reject",
                )
            result = self.store.apply(batch, base_version=base_version, idempotency_key=key, source=source)
        self.last_result = result
        if result.duplicate_delivery:
            logger.info("write %s to skillbook %s was already applied; skipped", key, self.name)
        # No read of the new version here: the next read (view(), the next step's current()) brings
        # the process's snapshot forward, and an eager one cost the single writer a round trip per apply.
        self.version = max(self.version, result.version)
        report: ApplyReport = result.report
        return report

    def apply_consolidation(
        self, operations: ConsolidationBatch | Iterable[ConsolidationOp]
    ) -> ConsolidationReport:
        """Apply a deduplication batch atomically in Redis, effectively once per write scope."""
        batch = (
            operations
            if isinstance(operations, ConsolidationBatch)
            else ConsolidationBatch(operations=list(operations))
        )
        scope = current_write_scope()
        key = scope.next_key() if scope is not None else f"adhoc:{uuid.uuid4().hex}"
        source = scope.source if scope is not None else None
        policy = self.store.review.policy()
        if batch.operations and policy.mode_of(CONSOLIDATE) == REVIEW:
            self.last_result = self.store.review.propose_consolidation(
                batch, idempotency_key=key, source=source, auto_approve_after=policy.auto_approve_after
            )
            self.refresh()
            return ConsolidationReport()  # nothing applied (unless auto-approved: see the change log)
        result = self.store.apply_consolidation(batch, idempotency_key=key, source=source)
        self.last_result = result
        self.refresh()
        return result.report

    def set_embeddings(self, embeddings: Mapping[str, tuple[str, Sequence[float]]]) -> int:
        """Keep nothing here: the skills are a snapshot shared through the cache, never changed.

        The distributed skillbook keeps embeddings in its Redis embedding cache
        (give the detector a RedisEmbeddingCache), keyed by content hash.
        """
        return 0

    def set_similarity_decision(self, id_a: str, id_b: str, decision: SimilarityDecision) -> None:
        """Record a decision about a pair of skills in Redis, as a new version."""
        self.store.set_similarity_decision(id_a, id_b, decision)
        self.refresh()

    def _apply_one_operation(self, operation: UpdateOperation) -> ApplyReport:
        return self.apply_update(UpdateBatch(operations=[operation]))

    def tag_skill(
        self, skill_id: str, tag: str, increment: int = 1, *, source: dict[str, Any] | None = None
    ) -> Skill:
        """Add to a counter of a skill in Redis; UnknownSkillError if it does not exist."""
        report = self._apply_one_operation(
            UpdateOperation(type="TAG", skill_id=skill_id, metadata={tag: increment}, insight_source=source)
        )
        return self._written(skill_id, report)

    def update_skill(
        self, skill_id: str, content: str, *, justification: str = "", evidence: str = ""
    ) -> Skill:
        """Replace a skill's content in Redis; UnknownSkillError if it does not exist, SkillTooLongError."""
        report = self._apply_one_operation(
            UpdateOperation(
                type="UPDATE",
                skill_id=skill_id,
                content=content,
                justification=justification,
                evidence=evidence,
            )
        )
        return self._written(skill_id, report)

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
        """Add a skill in Redis (or find the active skill of the section that already says it).

        SkillbookFullError when the skillbook is at its size limit: a single
        ADD left out would otherwise look like a success.
        """
        report = self._apply_one_operation(
            UpdateOperation(
                type="ADD",
                section=section,
                content=content,
                skill_id=skill_id,
                justification=justification,
                evidence=evidence,
                insight_source=sources[0] if sources else None,
            )
        )
        if report.full:
            raise SkillbookFullError(self.name, self.store.max_skills)
        if report.too_long:
            raise SkillTooLongError(f"the skill is refused: {report.too_long[0][2]}")
        new_id = report.added[0] if report.added else report.duplicates[0][1]
        return self._written(new_id, report)

    def remove_skill(self, skill_id: str, *, soft: bool = False) -> None:
        """Delete a skill in Redis (soft removal is not offered by the store yet)."""
        if soft:
            raise NotImplementedError("soft removal through the Redis store is not supported yet")
        report = self._apply_one_operation(UpdateOperation(type="REMOVE", skill_id=skill_id))
        if report.skipped:
            raise UnknownSkillError(skill_id)
        if report.pinned:
            raise PinnedSkillError(skill_id, "removed", self.name)

    def _written(self, skill_id: str, report: ApplyReport) -> Skill:
        if report.too_long:
            raise SkillTooLongError(f"the skill is refused: {report.too_long[0][2]}")
        if report.skipped:
            raise UnknownSkillError(skill_id)
        skill = self.view().get_skill(skill_id)
        if skill is None:  # removed by someone else right after our write
            raise UnknownSkillError(skill_id)
        return skill

    # -- reads: from the current version ----------------------------------------------
    def get_skill(self, skill_id: str) -> Skill | None:
        """A copy of one skill at the store's current version."""
        return self.view().get_skill(skill_id)

    def skills(self, include_invalid: bool = False) -> list[Skill]:
        """Copies of the skills at the store's current version."""
        return self.view().skills(include_invalid)

    def sections(self) -> list[str]:
        """Sections at the store's current version."""
        return self.view().sections()

    def stats(self) -> dict[str, Any]:
        """Counts at the store's current version."""
        return self.view().stats()

    def to_dict(self) -> dict[str, Any]:
        """The file format of the store's current version."""
        return self.view().to_dict()

    def dumps(self) -> str:
        """The store's current version as a JSON string."""
        return self.view().dumps()

    def save_to_file(self, path: str | os.PathLike[str]) -> None:
        """Write the store's current version as JSON, atomically."""
        write_text_atomically(Path(path), self.dumps())

    def as_prompt(
        self, budget: PromptBudget | None = None, query: str = "", scorer: RelevanceScorer | None = None
    ) -> str:
        """The prompt table of the store's current version."""
        return self.view().as_prompt(budget, query, scorer)

    def as_markdown(self) -> str:
        """Markdown of the store's current version."""
        return self.view().as_markdown()

    def keep_pairs(self) -> list[tuple[str, str]]:
        """Every pair judged distinct (KEEP) at the store's current version."""
        return self.view().keep_pairs()

    def get_similarity_decision(self, id_a: str, id_b: str) -> SimilarityDecision | None:
        """The decision recorded for the pair at the store's current version."""
        return self.view().get_similarity_decision(id_a, id_b)

    def has_keep_decision(self, id_a: str, id_b: str) -> bool:
        """True if the pair was judged distinct (KEEP) at the store's current version."""
        return self.view().has_keep_decision(id_a, id_b)

    def __len__(self) -> int:
        return len(self.view())

    def __contains__(self, skill_id: object) -> bool:
        return skill_id in self.view()

    def __repr__(self) -> str:
        return f"StoreBackedSkillbook({self.name!r}, version {self.version})"
