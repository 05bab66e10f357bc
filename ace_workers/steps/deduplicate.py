"""DeduplicateStep: every ``interval`` samples, look for near-duplicate skills."""

from __future__ import annotations

import logging

from ..core.context import ACEStepContext
from ..core.skillbook import Skillbook
from ..protocols import DeduplicationManagerLike
from ._checks import check_interval, is_due

__all__ = ["DeduplicateStep"]

logger = logging.getLogger(__name__)


class DeduplicateStep:
    """On samples whose ``global_sample_index`` is a multiple of ``interval``, report similar skills.

    Similarity is O(n^2) in the number of skills, hence the interval. Today
    the step logs the manager's similarity report; consolidating the skills
    it names arrives with the deduplication subsystem.
    """

    requires = frozenset({"global_sample_index"})
    provides: frozenset[str] = frozenset()
    max_workers = 1
    writes_skillbook = True

    def __init__(
        self, manager: DeduplicationManagerLike, skillbook: Skillbook, *, interval: int = 10
    ) -> None:
        self.manager = manager
        self.skillbook = skillbook
        self.interval = check_interval(interval)

    def __call__(self, ctx: ACEStepContext) -> ACEStepContext:
        if not is_due(ctx.global_sample_index, self.interval):
            return ctx
        report = self.manager.get_similarity_report(self.skillbook)
        if report:
            logger.info(
                "DeduplicateStep: similarity report at sample %d:\n%s", ctx.global_sample_index, report
            )
        return ctx

    def __repr__(self) -> str:
        return f"DeduplicateStep({self.manager!r}, interval={self.interval})"
