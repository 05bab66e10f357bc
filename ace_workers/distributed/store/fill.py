"""How full a skillbook is, as ``status`` and ``skillbook show`` report it (and the console shows)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .keys import STAT_ADDS_SKIPPED_FULL

if TYPE_CHECKING:  # a type only: whoever holds a store imported it already
    from .store import RedisSkillbookStore

__all__ = ["skillbook_fill"]


def skillbook_fill(store: RedisSkillbookStore) -> dict[str, int]:
    """How full a skillbook is: active skills, the limit, and ADDs left out for lack of room."""
    return {
        "active_skills": store.active_skills(),
        "max_skills": store.max_skills,
        "adds_skipped_full": store.stats()[STAT_ADDS_SKIPPED_FULL],
    }
