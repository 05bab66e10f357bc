"""A skill's lifecycle by hand: pin, unpin, archive, restore, the archived list, and pruning stale skills.

Changing needs role admin (curating a skillbook by hand); listing and a prune's plan, read.
Each change is one version in the change log with the principal as its actor.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..core.lifecycle_rules import StaleRule
from ..core.skill import Skill
from ..distributed.store.lifecycle_writes import LifecycleResult, PrunePlan
from .access import ADMIN, READ, existing_store
from .fleet import FleetClient
from .principal import Principal

__all__ = [
    "CHANGES",
    "CHANGE_ROLE",
    "PruneResult",
    "change_skills",
    "pin_skills",
    "archived_skills",
    "plan_prune",
    "prune",
]

CHANGE_ROLE = ADMIN
# The changes a person makes to skills, each a method of the store of the same name.
CHANGES = ("pin", "unpin", "archive", "restore")


@dataclass(frozen=True)
class PruneResult:
    """The stale skills found, and (when applied) what archiving them did."""

    plan: PrunePlan
    applied: LifecycleResult | None = None


def change_skills(
    fleet: FleetClient,
    principal: Principal,
    name: str,
    change: str,
    skill_ids: Iterable[str],
    *,
    note: str = "",
) -> LifecycleResult:
    """Pin, unpin, archive or restore (``change``) the skills, as one version (none if all were so already).

    Raises UnknownSkillError for an id the skillbook has not, PinnedSkillError archiving a
    pinned skill, SkillStateError for a skill in a state the change cannot act on.
    """
    if change not in CHANGES:
        raise ValueError(f"unknown lifecycle change {change!r}: use {', '.join(CHANGES)}")
    store = existing_store(fleet, principal, CHANGE_ROLE, name)
    result: LifecycleResult = getattr(store, change)(list(skill_ids), actor=principal.name, note=note)
    return result


def pin_skills(
    fleet: FleetClient, principal: Principal, name: str, skill_ids: Iterable[str], *, note: str = ""
) -> LifecycleResult:
    """Pin skills: never removed, merged or archived (by learning, dedup or prune) until unpinned."""
    return change_skills(fleet, principal, name, "pin", skill_ids, note=note)


def archived_skills(fleet: FleetClient, principal: Principal, name: str) -> list[Skill]:
    """The archived skills of ``name``, in skillbook order."""
    return existing_store(fleet, principal, READ, name).archived()


def plan_prune(fleet: FleetClient, principal: Principal, name: str, rule: StaleRule) -> PruneResult:
    """The skills stale by ``rule`` (never pinned ones), each with why; nothing changes."""
    return PruneResult(existing_store(fleet, principal, READ, name).plan_prune(rule))


def prune(
    fleet: FleetClient, principal: Principal, name: str, rule: StaleRule, *, note: str = ""
) -> PruneResult:
    """Archive the skills stale by ``rule`` in one version, as the principal.

    StaleHistoryError when the change log no longer holds the batches ``rule`` counts back.
    """
    store = existing_store(fleet, principal, CHANGE_ROLE, name)
    plan, applied = store.prune(rule, actor=principal.name, note=note)
    return PruneResult(plan, applied)
