"""Skill count and prompt size over a skillbook's versions, derived from its change log.

The head's snapshot gives the last point; each change-log entry, walked newest
first, gives the one before it: an entry's before and after images are exactly
the skills its version changed, so undoing them steps the count of active skills
and their content's characters back one version. The walk is bounded (the last
``versions`` entries), so a skillbook with a long history costs no more than that,
and it stops where the log has a gap (trimmed by ACE_CHANGELOG_MAXLEN).
"""

from __future__ import annotations

from typing import Any

from ...distributed.store.changelog import ChangeRecord, SkillImage
from ...distributed.store.planning import active_growth, is_active
from ...distributed.store.store import RedisSkillbookStore

__all__ = ["DEFAULT_VERSIONS", "MAX_VERSIONS", "skill_curves"]

DEFAULT_VERSIONS = 500
MAX_VERSIONS = 5000


def skill_curves(store: RedisSkillbookStore, versions: int) -> dict[str, Any]:
    """Active skills and their content characters at each of the last ``versions`` versions (and the head).

    ``points`` are oldest first; ``reaches_start`` is True when the walk got back to
    version 0 (the whole history is plotted), else ``from_version`` is where it stopped.
    """
    head, book = store.cached_snapshot()
    if head == 0:
        return {"versions": versions, "from_version": 0, "to_version": 0, "reaches_start": True, "points": []}
    active = book.skills()  # the active ones: what a prompt can show
    count, chars = len(active), sum(len(skill.content) for skill in active)
    points = [_point(head, count, chars)]
    expected = head
    for record in store.history(versions):
        if record.version > expected:
            continue  # written after the snapshot was read
        if record.version != expected:
            break  # a gap: the log was trimmed before this version
        skills, text = _growth(record)
        count, chars = count - skills, chars - text
        expected -= 1
        points.append(_point(expected, count, chars))
        if expected == 0:
            break
    points.reverse()
    return {
        "versions": versions,
        "from_version": expected,
        "to_version": head,
        "reaches_start": expected == 0,
        "points": points,
    }


def _growth(record: ChangeRecord) -> tuple[int, int]:
    """What one version added: active skills, and characters of active skills' content (net)."""
    changes = {i: (record.before.get(i), record.after.get(i)) for i in {**record.before, **record.after}}
    text = sum(_chars(after) - _chars(before) for before, after in changes.values())
    return active_growth(changes), text


def _chars(image: SkillImage) -> int:
    return len(str(image.get("content") or "")) if image is not None and is_active(image) else 0


def _point(version: int, count: int, chars: int) -> dict[str, int]:
    return {"version": version, "active_skills": count, "content_chars": chars}
