"""Pruning: soft-delete skills whose harmful votes outweigh their helpful ones, as DeleteOps.

The rule (:class:`PruneRule`) is part of the configuration, in ``protocols.deduplication``.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..core.consolidation import DeleteOp
from ..core.skill import Skill
from ..protocols.deduplication import PruneRule

__all__ = ["PruneRule", "plan_pruning"]


def plan_pruning(skills: Iterable[Skill], rule: PruneRule, *, exclude: Iterable[str] = ()) -> list[DeleteOp]:
    """One DeleteOp per skill the rule applies to, except the ids in ``exclude``."""
    skip = set(exclude)
    return [
        DeleteOp(
            skill_id=skill.id,
            reasoning=f"pruned: {skill.harmful} harmful vs {skill.helpful} helpful votes",
        )
        for skill in skills
        if skill.id not in skip and rule.applies_to(skill)
    ]
