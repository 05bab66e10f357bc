"""Pruning: soft-delete skills whose harmful votes outweigh their helpful ones, as DeleteOps."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..core.consolidation import DeleteOp
from ..core.skill import Skill

__all__ = ["PruneRule", "plan_pruning"]


@dataclass(frozen=True)
class PruneRule:
    """Delete a skill once it has ``min_tags`` votes and ``harmful - helpful >= harmful_margin``.

    The minimum keeps one unlucky vote from removing a new skill.
    """

    min_tags: int = 5
    harmful_margin: int = 3

    def __post_init__(self) -> None:
        if self.min_tags < 1 or self.harmful_margin < 1:
            raise ValueError(
                f"PruneRule needs min_tags >= 1 and harmful_margin >= 1, got {self.min_tags}, "
                f"{self.harmful_margin}"
            )

    def applies_to(self, skill: Skill) -> bool:
        """True if ``skill`` is active and has proved harmful by this rule."""
        votes = skill.helpful + skill.harmful + skill.neutral
        return (
            skill.is_active
            and votes >= self.min_tags
            and skill.harmful - skill.helpful >= self.harmful_margin
        )


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
