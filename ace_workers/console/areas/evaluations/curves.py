"""Skill count and prompt size over a skillbook's versions, derived from its change log.

The head's skill index gives the last point; each change-log entry, walked newest
first, gives the one before it: an entry's before and after images are exactly
the skills its version changed, so undoing them steps the count of active skills
and their content's characters back one version. The walk is bounded (the last
``versions`` entries), so a skillbook with a long history costs no more than that,
and it stops where the log has a gap (trimmed by ACE_CHANGELOG_MAXLEN).
"""

from __future__ import annotations

from typing import Any

from ....distributed.store.skill_index import skill_index
from ....distributed.store.store import RedisSkillbookStore
from ..change_digests import recent_digests

__all__ = ["DEFAULT_VERSIONS", "MAX_VERSIONS", "skill_curves"]

DEFAULT_VERSIONS = 500
MAX_VERSIONS = 5000


def skill_curves(store: RedisSkillbookStore, versions: int) -> dict[str, Any]:
    """Active skills and their content characters at each of the last ``versions`` versions (and the head).

    ``points`` are oldest first; ``reaches_start`` is True when the walk got back to
    version 0 (the whole history is plotted), else ``from_version`` is where it stopped.
    Each version's growth comes from its digest, kept per version (change_digests.py).
    """
    # The head's skill index (kept per version, as the skillbook page reads it): no pass over the skills.
    index = skill_index(store)
    head, incarnation = index.version, index.incarnation
    if head == 0:
        return {"versions": versions, "from_version": 0, "to_version": 0, "reaches_start": True, "points": []}
    count, chars = index.counts["active"], index.active_chars
    points = [_point(head, count, chars)]
    expected = head
    found = recent_digests(store, versions, before=head + 1)
    # Another incarnation's log (deleted and created again since the snapshot): nothing to walk.
    for digest in found.digests if found.incarnation == incarnation else []:
        if digest.version != expected:
            break  # a gap: the log was trimmed before this version
        count, chars = count - digest.active_growth, chars - digest.content_growth
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


def _point(version: int, count: int, chars: int) -> dict[str, int]:
    return {"version": version, "active_skills": count, "content_chars": chars}
