"""ApplyStep: apply the SkillManager's update batch to the real skillbook."""

from __future__ import annotations

import logging

from ..core.context import ACEStepContext
from ..core.writable import WritableSkillbook
from ..counts import counted
from ._checks import require_field

__all__ = ["ApplyStep"]

logger = logging.getLogger(__name__)


class ApplyStep:
    """Apply ``ctx.skill_manager_output.update`` to the injected skillbook, all or nothing.

    A malformed operation fails the sample (InvalidUpdateError, nothing
    applied); operations naming an unknown skill are skipped by the
    skillbook and summarised here at WARNING.
    """

    requires = frozenset({"skill_manager_output"})
    provides: frozenset[str] = frozenset()
    max_workers = 1
    exclusive = True  # writes the skillbook: calls never overlap
    writes_skillbook = True

    def __init__(self, skillbook: WritableSkillbook) -> None:
        self.skillbook = skillbook

    def __call__(self, ctx: ACEStepContext) -> ACEStepContext:
        output = require_field(ctx.skill_manager_output, "ApplyStep", "skill_manager_output")
        report = self.skillbook.apply_update(output.update)
        if report.skipped:
            logger.warning(
                "ApplyStep: sample %d: skipped %s naming unknown skills: %s",
                ctx.global_sample_index,
                counted(report.skipped_ops, "operation"),
                ", ".join(f"#{index} {op_type} {skill_id!r}" for index, op_type, skill_id in report.skipped),
            )
        logger.debug(
            "ApplyStep: sample %d: added %s, updated %s, tagged %s, removed %s",
            ctx.global_sample_index,
            report.added,
            report.updated,
            report.tagged,
            report.removed,
        )
        return ctx

    def __repr__(self) -> str:
        return f"ApplyStep({self.skillbook!r})"
