"""A skill's lifecycle: pinned, archived and restored by hand, and stale skills found for pruning.

* **pin**: a person marks a skill as one to keep. A pinned skill is never
  removed by a SkillManager REMOVE (skipped and reported), never merged,
  deleted or rewritten by deduplication, never archived (by hand or by
  pruning) until it is unpinned. It still learns: TAGs and UPDATEs apply.
* **archive**: the skill leaves the prompt and the active count but is kept,
  with when, by whom and why (``Skill.archive_info``), and can be restored.
* **restore**: an archived skill is active again, and starts a new stale period.

Stale detection uses a signal the learning loop already writes, so it costs
nothing on the execute path: ``updated_at``, which every ADD, UPDATE, TAG and
merge moves (the Reflector tags the skills the agent cited, so a skill the
agent keeps using keeps being tagged). Whether a skill was merely *injected*
into a prompt is not tracked: at 100,000 skills that would be a write per
execution, and a skill shown but never cited has not helped. A skill is a
prune candidate when it is active, not pinned, and has not been touched for
``days`` days and/or by the learning of the last ``batches`` batches (the store
reads those from its change log; see distributed/store/lifecycle.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Set
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import Enum
from typing import Any

from ..errors import PinnedSkillError, SkillStateError
from .skill import Skill, utc_now

__all__ = [
    "LifecycleAction",
    "PruneCandidate",
    "RecentTouches",
    "StaleRule",
    "change_lifecycle",
    "find_stale_skills",
]


class LifecycleAction(str, Enum):
    """What a lifecycle change does to a skill."""

    PIN = "pin"
    UNPIN = "unpin"
    ARCHIVE = "archive"
    RESTORE = "restore"


_REMOVED = "was removed (status invalid): only rollback brings a removed skill back"


def _pin(skill: Skill, actor: str, reason: str, now: str) -> bool:
    if skill.status == "invalid":
        raise SkillStateError(skill.id, _REMOVED)
    if skill.is_archived:
        raise SkillStateError(skill.id, "is archived: restore it before pinning it")
    if skill.pinned:
        return False
    skill.pinned = True
    return True


def _unpin(skill: Skill, actor: str, reason: str, now: str) -> bool:
    if not skill.pinned:
        return False
    skill.pinned = False
    return True


def _archive(skill: Skill, actor: str, reason: str, now: str) -> bool:
    if skill.pinned:
        raise PinnedSkillError(skill.id, "archived")
    if skill.status == "invalid":
        raise SkillStateError(skill.id, _REMOVED)
    if skill.is_archived:
        return False
    skill.status = "archived"
    # updated_at stays: it is the evidence of when the skill was last used.
    skill.archive_info = {"at": now, "by": actor, "reason": reason}
    return True


def _restore(skill: Skill, actor: str, reason: str, now: str) -> bool:
    if skill.status == "invalid":
        raise SkillStateError(skill.id, f"is not archived; it {_REMOVED}")
    if not skill.is_archived:
        return False
    skill.status = "active"
    skill.archive_info = None
    skill.updated_at = now  # a restored skill starts a new stale period
    return True


_CHANGES = {
    LifecycleAction.PIN: _pin,
    LifecycleAction.UNPIN: _unpin,
    LifecycleAction.ARCHIVE: _archive,
    LifecycleAction.RESTORE: _restore,
}


def change_lifecycle(
    skill: Skill,
    action: LifecycleAction,
    *,
    actor: str,
    reason: str = "",
    now: str | None = None,
    skillbook: str | None = None,
) -> bool:
    """Apply ``action`` to ``skill`` in place; False when the skill was in that state already.

    Raises (naming ``skillbook`` when given):
        PinnedSkillError: archiving a pinned skill.
        SkillStateError: acting on a removed skill, or pinning an archived one.
    """
    try:
        return _CHANGES[LifecycleAction(action)](skill, actor, reason, now or utc_now())
    except PinnedSkillError as exc:
        if skillbook is None:
            raise
        raise PinnedSkillError(exc.skill_id, exc.action, skillbook) from None
    except SkillStateError as exc:
        if skillbook is None:
            raise
        raise SkillStateError(exc.skill_id, exc.reason, skillbook) from None


@dataclass(frozen=True)
class StaleRule:
    """When a skill is stale: untouched for ``days`` days and/or by the last ``batches`` batches.

    With both, a skill must be stale by both measures (pruning errs on keeping).
    """

    days: float | None = None
    batches: int | None = None

    def __post_init__(self) -> None:
        if self.days is None and self.batches is None:
            raise ValueError("a stale rule needs days, batches or both")
        if self.days is not None and not self.days > 0:
            raise ValueError(f"days must be above 0, got {self.days!r}")
        if self.batches is not None and (isinstance(self.batches, bool) or self.batches < 1):
            raise ValueError(f"batches must be at least 1, got {self.batches!r}")

    def to_dict(self) -> dict[str, Any]:
        """The rule as JSON (the measures given)."""
        return {key: value for key, value in (("days", self.days), ("batches", self.batches)) if value}


@dataclass(frozen=True)
class RecentTouches:
    """The skills the learning of the last ``batches`` batches touched (read from a change log).

    ``complete`` is False when fewer batches than asked ever wrote: then no skill
    has missed that many batches, and none is stale by this measure.
    """

    touched: Set[str]
    batches: int
    complete: bool


@dataclass(frozen=True)
class PruneCandidate:
    """A stale skill pruning would archive, and why."""

    skill_id: str
    section: str
    content: str
    last_touched: str  # the skill's updated_at
    reason: str

    def to_dict(self) -> dict[str, str]:
        """The candidate as JSON."""
        return {
            "id": self.skill_id,
            "section": self.section,
            "content": self.content,
            "last_touched": self.last_touched,
            "reason": self.reason,
        }


def _parse_time(text: str) -> datetime | None:
    try:
        parsed = datetime.fromisoformat(text)
    except (TypeError, ValueError):
        return None
    return parsed if parsed.tzinfo is not None else None


def find_stale_skills(
    skills: Iterable[Skill], rule: StaleRule, *, now: datetime, recent: RecentTouches | None = None
) -> list[PruneCandidate]:
    """The active, unpinned skills stale by ``rule``, in the order given, each with its reason.

    ``recent`` is needed when the rule counts batches. A skill whose
    ``updated_at`` cannot be read is never stale by days (pruning errs on keeping).
    """
    if rule.batches is not None and recent is None:
        raise ValueError("a stale rule counting batches needs the recent touches")
    cutoff = now - timedelta(days=rule.days) if rule.days is not None else None
    candidates = []
    for skill in skills:
        if not skill.is_active or skill.pinned:
            continue
        reasons = []
        if cutoff is not None:
            touched_at = _parse_time(skill.updated_at)
            if touched_at is None or touched_at > cutoff:
                continue
            reasons.append(f"not tagged or updated for {(now - touched_at).days} days")
        if recent is not None and rule.batches is not None:
            if not recent.complete or skill.id in recent.touched:
                continue
            reasons.append(f"not tagged or updated by the last {rule.batches} batches")
        candidates.append(
            PruneCandidate(skill.id, skill.section, skill.content, skill.updated_at, " and ".join(reasons))
        )
    return candidates
