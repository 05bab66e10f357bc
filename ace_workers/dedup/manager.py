"""DeduplicationManager: similar pairs in, consolidation operations out, applied through the skillbook.

The flow of one run (:meth:`DeduplicationManager.deduplicate`):

1. the detector embeds new or changed skills and finds similar pairs;
2. the LLM (the SkillManager's client) decides each pair from the
   similarity report; answers naming ids that are not in the report, or
   already merged away, are fed back and retried a bounded number of times;
3. pairs the LLM did not decide (or all pairs, with no LLM or a failing one)
   at or above ``auto_merge_threshold`` are merged, keeping the older skill;
4. the optional prune rule adds DeleteOps for skills that proved harmful;
5. the batch goes to ``skillbook.apply_consolidation``: all or nothing.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from datetime import date
from typing import Any

from ..core.consolidation import (
    ConsolidationBatch,
    ConsolidationOp,
    ConsolidationReport,
    MergeOp,
    check_consolidation,
)
from ..core.skill import Skill
from ..core.writable import WritableSkillbook
from ..counts import counted
from ..errors import InvalidConsolidationError, InvalidUpdateError, LLMError
from ..observability.spans import traced_llm_call
from ..protocols import LLMClientLike
from ..protocols.deduplication import DeduplicationConfig
from .cache import EmbeddingCache
from .detector import SimilarityDetector, SimilarPair
from .embedders import make_embedder
from .prompts import (
    CONSOLIDATION_PROMPT,
    FEEDBACK_TEMPLATE,
    ConsolidationResponse,
    format_similarity_report,
    older_first,
)
from .pruning import plan_pruning
from .relevance import EmbeddingRelevance

__all__ = ["DeduplicationManager", "plan_auto_merges"]

logger = logging.getLogger(__name__)


def plan_auto_merges(
    pairs: Iterable[SimilarPair], skills: Mapping[str, Skill], threshold: float
) -> list[MergeOp]:
    """The deterministic rule: merge each pair at or above ``threshold`` into its older skill.

    Pairs are taken most similar first. A skill is merged at most once and
    only into a skill that is not itself merged away, so every merged skill
    is directly similar to the one it joins (no drift along chains).
    """
    members: dict[str, list[str]] = {}
    merged_away: set[str] = set()
    for pair in sorted(pairs, key=lambda p: -p.similarity):
        if pair.similarity < threshold or {pair.id_a, pair.id_b} & merged_away:
            continue
        keep, other = older_first(skills[pair.id_a], skills[pair.id_b])
        if other.id in members:  # it already keeps others: leave it standing
            continue
        members.setdefault(keep.id, []).append(other.id)
        merged_away.add(other.id)
    return [
        MergeOp(
            keep_id=keep_id,
            merge_ids=merge_ids,
            reasoning=f"similarity >= {threshold}: the same skill; the older one is kept",
        )
        for keep_id, merge_ids in members.items()
    ]


class DeduplicationManager:
    """Finds near-duplicate skills and consolidates them (merge, delete, keep, update).

    Satisfies :class:`~ace_workers.protocols.DeduplicationManagerLike`.

    Args:
        config: The settings; defaults to :class:`DeduplicationConfig`.
        llm: The client that decides pairs (usually the SkillManager's). Without
            one, only the auto-merge rule (and pruning) acts.
        detector: A ready detector; by default one is built from the config's
            embedding provider and model.
        embedding_cache: Where the default detector looks embeddings up by
            content hash (for example a Redis-backed cache).

    Raises:
        EmbeddingUnavailableError: the configured provider cannot work here
            (e.g. sentence-transformers missing: install ``ace-workers[embeddings]``).
    """

    def __init__(
        self,
        config: DeduplicationConfig | None = None,
        *,
        llm: LLMClientLike | None = None,
        detector: SimilarityDetector | None = None,
        embedding_cache: EmbeddingCache | None = None,
    ) -> None:
        self.config = config if config is not None else DeduplicationConfig()
        self.llm = llm
        if detector is None:
            provider = self.config.embedding_provider
            detector = SimilarityDetector(
                make_embedder(provider, self.config.embedding_model),
                model_name=self.config.embedding_model if isinstance(provider, str) else None,
                cache=embedding_cache,
            )
        self.detector = detector

    def __repr__(self) -> str:
        return (
            f"DeduplicationManager(threshold={self.config.similarity_threshold}, "
            f"llm={'yes' if self.llm is not None else 'no'}, {self.detector!r})"
        )

    def relevance(self) -> EmbeddingRelevance:
        """A prompt-budget scorer using this manager's embedder and caches (for Agent/SkillManager)."""
        return EmbeddingRelevance(self.detector)

    # -- detection ---------------------------------------------------------------------
    def find_similar_pairs(self, skillbook: WritableSkillbook) -> list[SimilarPair]:
        """Similar pairs by the config, most similar first (at most ``max_pairs_per_run``)."""
        if not self.config.enabled:
            return []
        return self.detector.detect_similar_pairs(
            skillbook,
            self.config.similarity_threshold,
            within_section_only=self.config.within_section_only,
            max_pairs=self.config.max_pairs_per_run,
        )

    def get_similarity_report(self, skillbook: WritableSkillbook) -> str | None:
        """The similar pairs as the consolidation prompt shows them, or None if too few."""
        pairs = self.find_similar_pairs(skillbook)
        if len(pairs) < self.config.min_pairs_to_report:
            return None
        return format_similarity_report(pairs, {s.id: s for s in skillbook.skills()})

    # -- planning ----------------------------------------------------------------------
    def plan(self, skillbook: WritableSkillbook) -> ConsolidationBatch:
        """The consolidation operations for the skillbook as it is now (nothing is applied)."""
        if not self.config.enabled:
            return ConsolidationBatch()
        skills = {s.id: s for s in skillbook.skills(include_invalid=True)}
        pairs = self.find_similar_pairs(skillbook)
        ops: list[ConsolidationOp] = []
        if len(pairs) >= self.config.min_pairs_to_report:
            if self.llm is not None:
                ops.extend(self._ask_llm(self.llm, pairs, skills))
            ops.extend(self._auto_merges(pairs, skills, ops))
        if self.config.prune is not None:
            named = {skill_id for op in ops for skill_id in op.named_ids()}
            ops.extend(plan_pruning(skills.values(), self.config.prune, exclude=named))
        check_consolidation(ops, skills)  # each part is valid; this guards their combination
        named = {skill_id for op in ops for skill_id in op.named_ids()}
        batch = ConsolidationBatch(
            reasoning=f"{counted(len(pairs), 'similar pair')} considered",
            operations=ops,
            planned_contents={skill_id: skills[skill_id].content for skill_id in sorted(named)},
        )
        logger.info(
            "deduplication planned %s for %s",
            counted(len(ops), "operation"),
            counted(len(pairs), "similar pair"),
        )
        return batch

    def _auto_merges(
        self, pairs: Sequence[SimilarPair], skills: Mapping[str, Skill], decided: Sequence[ConsolidationOp]
    ) -> list[MergeOp]:
        threshold = self.config.auto_merge_threshold
        if threshold is None:
            return []
        named = {skill_id for op in decided for skill_id in op.named_ids()}
        open_pairs = [p for p in pairs if p.id_a not in named and p.id_b not in named]
        return plan_auto_merges(open_pairs, skills, threshold)

    def _ask_llm(
        self, llm: LLMClientLike, pairs: Sequence[SimilarPair], skills: Mapping[str, Skill]
    ) -> list[ConsolidationOp]:
        report = format_similarity_report(pairs, skills)
        # The LLM may only act on the skills it was shown.
        shown = {i: skills[i] for pair in pairs for i in (pair.id_a, pair.id_b)}
        feedback = ""
        for attempt in range(1, self.config.llm_attempts + 1):
            prompt = CONSOLIDATION_PROMPT.format(
                current_date=date.today().isoformat(), pairs=report, feedback=feedback
            )
            try:
                with traced_llm_call(
                    llm, response_model="ConsolidationResponse", role="Deduplication"
                ) as call:
                    response = llm.complete_structured(prompt, ConsolidationResponse)
                    call.record(response)
            except LLMError as exc:
                logger.warning("consolidation call failed (%s); only the auto-merge rule applies", exc)
                return []
            try:
                check_consolidation(response.consolidation_operations, shown)
            except InvalidUpdateError as exc:
                logger.info("consolidation answer %d rejected: %s", attempt, exc)
                feedback = FEEDBACK_TEMPLATE.format(error=exc)
                continue
            return list(response.consolidation_operations)
        logger.warning(
            "consolidation answers were rejected %s; only the auto-merge rule applies",
            counted(self.config.llm_attempts, "time"),
        )
        return []

    # -- parsing and applying ------------------------------------------------------------
    @staticmethod
    def parse_consolidation_operations(data: str | bytes | Mapping[str, Any]) -> list[ConsolidationOp]:
        """The operations of a response object (``consolidation_operations``, or ``operations``).

        Raises InvalidUpdateError naming the malformed operation.
        """
        try:
            raw = json.loads(data) if isinstance(data, str | bytes) else dict(data)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise InvalidUpdateError(-1, "", f"the response is not valid JSON ({exc})") from exc
        if not isinstance(raw, dict):
            raise InvalidUpdateError(-1, "", f"expected a JSON object, got {type(raw).__name__}")
        operations = raw.get("consolidation_operations", raw.get("operations", []))
        return list(ConsolidationBatch.from_dict({"operations": operations}).operations)

    @staticmethod
    def apply_operations(
        operations: ConsolidationBatch | Iterable[ConsolidationOp], skillbook: WritableSkillbook
    ) -> ConsolidationReport:
        """Apply operations through ``skillbook.apply_consolidation`` (all or nothing)."""
        return skillbook.apply_consolidation(operations)

    def deduplicate(self, skillbook: WritableSkillbook, attempts: int = 2) -> ConsolidationReport:
        """Plan and apply one consolidation run; returns what changed.

        A plan that went stale before it applied (a skill it names was removed
        or rewritten meanwhile) is planned again, up to ``attempts`` times.
        """
        for _ in range(attempts - 1):
            try:
                return self._plan_and_apply(skillbook)
            except InvalidConsolidationError as exc:
                logger.info("deduplication plan went stale (%s); planning again", exc)
        return self._plan_and_apply(skillbook)

    def _plan_and_apply(self, skillbook: WritableSkillbook) -> ConsolidationReport:
        batch = self.plan(skillbook)
        if not batch.operations:
            return ConsolidationReport()
        report = skillbook.apply_consolidation(batch)
        logger.info("deduplication applied: %s", report.summary())
        return report
