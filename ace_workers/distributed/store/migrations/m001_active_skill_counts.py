"""Migration 1 (unversioned data to schema 1): every skillbook's meta holds its active-skill count.

Skillbooks last written before the count was kept (commit 53e44f1, "Enforce
ACE_MAX_SKILLBOOK_SKILLS") lack ``active_skills`` in their meta hash; the store counts
them on each read and on their next write. Data written since always holds it, so on such
data this finds nothing to do and only the stamp changes. Once every deployment is past
schema 1, the store's fallback for a missing count can go.
"""

from __future__ import annotations

import redis

from ..errors import VersionConflict
from ..keys import SkillbookKeys
from ..planning import count_active
from ..replies import decode_int
from ..store import list_skillbooks
from ..transactions import META_ACTIVE_SKILLS, watch_keys
from .base import Changes, Progress

__all__ = ["ActiveSkillCounts"]

# A skillbook written by the fleet between the read and the commit: try again this often.
_ATTEMPTS = 10
_WHAT = "skillbooks given their active-skill count"


class ActiveSkillCounts:
    """Store the active-skill count of every skillbook whose meta lacks it."""

    number = 1
    description = "store the active-skill count of skillbooks written before it was kept"
    # Each skillbook is counted under a WATCH of its version, as the store's own writes count it.
    fleet_may_run = True

    def plan(self, client: redis.Redis, prefix: str) -> Changes:
        missing = sum(1 for keys in _skillbooks(client, prefix) if _lacks_count(client, keys))
        return {_WHAT: missing}

    def apply(self, client: redis.Redis, prefix: str, progress: Progress) -> Changes:
        counted = 0
        for done, keys in enumerate(_skillbooks(client, prefix), start=1):
            counted += _store_count(client, keys)
            progress(done)
        return {_WHAT: counted}


def _skillbooks(client: redis.Redis, prefix: str) -> list[SkillbookKeys]:
    return [SkillbookKeys(name, prefix) for name in list_skillbooks(client, prefix)]


def _lacks_count(client: redis.Redis, keys: SkillbookKeys) -> bool:
    written = decode_int(client.get(keys.version), keys.version) > 0
    return written and not client.hexists(keys.meta, META_ACTIVE_SKILLS)


def _store_count(client: redis.Redis, keys: SkillbookKeys) -> int:
    """1 if this stored the count of one skillbook, 0 if it had one (or was never written)."""
    with client.pipeline(transaction=True) as pipe:
        for _ in range(_ATTEMPTS):
            try:
                watch_keys(pipe, keys.version, keys.meta, keys.skills)
                if not decode_int(pipe.get(keys.version), keys.version) or pipe.hexists(
                    keys.meta, META_ACTIVE_SKILLS
                ):
                    return 0
                active = count_active(pipe.hgetall(keys.skills), keys.skills)
                pipe.multi()
                pipe.hset(keys.meta, META_ACTIVE_SKILLS, active)
                pipe.execute()
                return 1
            except redis.WatchError:
                continue
    raise VersionConflict(keys.name, _ATTEMPTS, "storing its active-skill count")  # run migrate again
