"""DeduplicateStep: every ``interval`` samples, consolidate near-duplicate skills."""

from __future__ import annotations

import logging

from ..core.context import ACEStepContext
from ..core.writable import WritableSkillbook
from ..errors import InvalidUpdateError
from ..protocols import DeduplicationManagerLike
from ._checks import check_interval, is_due

__all__ = ["DeduplicateStep"]

logger = logging.getLogger(__name__)


class DeduplicateStep:
    """On samples whose ``global_sample_index`` is a multiple of ``interval``, consolidate skills.

    The manager plans the operations; the step applies them with
    ``skillbook.apply_consolidation``, all or nothing, so a store-backed
    skillbook writes them through its store. A plan that went stale before it
    was applied (another step removed a skill it names) is planned once more.
    A manager with no ``plan`` method (report only) has its report logged.
    """

    requires = frozenset({"global_sample_index"})
    provides: frozenset[str] = frozenset()
    max_workers = 1
    exclusive = True  # writes the skillbook: calls never overlap
    writes_skillbook = True

    def __init__(
        self, manager: DeduplicationManagerLike, skillbook: WritableSkillbook, *, interval: int = 10
    ) -> None:
        self.manager = manager
        self.skillbook = skillbook
        self.interval = check_interval(interval)

    def __call__(self, ctx: ACEStepContext) -> ACEStepContext:
        if not is_due(ctx.global_sample_index, self.interval):
            return ctx
        if getattr(self.manager, "plan", None) is None:
            self._log_report(ctx.global_sample_index)
            return ctx
        try:
            self._consolidate(ctx.global_sample_index)
        except InvalidUpdateError as exc:
            logger.info("DeduplicateStep: plan went stale (%s); planning again", exc)
            self._consolidate(ctx.global_sample_index)
        return ctx

    def _consolidate(self, sample_index: int) -> None:
        batch = self.manager.plan(self.skillbook)
        if not batch.operations:
            return
        report = self.skillbook.apply_consolidation(batch)
        logger.info("DeduplicateStep: at sample %d, %s", sample_index, report.summary())

    def _log_report(self, sample_index: int) -> None:
        report = self.manager.get_similarity_report(self.skillbook)
        if report:
            logger.info("DeduplicateStep: similarity report at sample %d:\n%s", sample_index, report)

    def __repr__(self) -> str:
        return f"DeduplicateStep({self.manager!r}, interval={self.interval})"
