"""Pin, unpin, archive, restore and prune the skills of a Redis skillbook, one transaction each.

Each attempt has the store's shape: WATCH the version, read only the named
skills (and the content-index fields their change moves), apply the core's
rules to them (core/lifecycle_rules.py), MULTI, write them, keep the active-skill
count, bump the version, append a LIFECYCLE change-log entry with before and
after images (so diff and rollback work), EXEC. A skill already in the asked
state is left as it is; when no skill changes, no version is made.

Pruning finds stale skills on a snapshot (core/lifecycle_rules.py says what stale
means). "The last N batches" are read from the change log, newest first: the
entries back to where an (N+1)-th batch appears, each APPLY or CONSOLIDATE
entry's touched skills counting as used. Then it archives them in one
transaction, leaving out any candidate touched, pinned or archived since it
was found (its ``updated_at`` is compared), so exactly the still-stale
candidates are archived, in one version.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import redis
from redis.client import Pipeline

from ...core.lifecycle_rules import (
    LifecycleAction,
    PruneCandidate,
    RecentTouches,
    StaleRule,
    change_lifecycle,
    find_stale_skills,
)
from ...core.skill import Skill, utc_now
from ...core.skillbook import Skillbook
from ...errors import UnknownSkillError
from .actors import PRUNE, check_actor, local_user_actor
from .changelog import ChangeKind, ChangeRecord, SkillImage, stream_id
from .errors import StaleHistoryError, UnknownSkillbookError
from .keys import META_NEXT_ORDER, SkillbookKeys
from .planning import SkillReads, is_active, plan_index
from .replies import decode_int, stream_newest_first
from .transactions import CompareAndSet, SkillbookWrites, dump_json, records_of, watch_keys

__all__ = [
    "LifecycleResult",
    "LifecycleWrites",
    "PrunePlan",
    "SkillbookLifecycle",
    "recent_touches",
]


@dataclass(frozen=True)
class LifecycleResult:
    """What one lifecycle change did: the version it made (or the current one when nothing changed)."""

    action: str
    version: int
    changed: list[str]  # skills now in the asked state
    unchanged: list[str]  # skills that were in it already
    skipped: dict[str, str] = field(default_factory=dict)  # prune: candidates no longer stale, and why

    def to_dict(self) -> dict[str, Any]:
        """The result as JSON."""
        return {
            "action": self.action,
            "version": self.version,
            "changed": self.changed,
            "unchanged": self.unchanged,
            "skipped": self.skipped,
        }


@dataclass(frozen=True)
class PrunePlan:
    """The stale skills of one version, by a rule; ``recent`` when the rule counts batches."""

    version: int
    rule: StaleRule
    candidates: list[PruneCandidate]
    recent: RecentTouches | None

    def to_dict(self) -> dict[str, Any]:
        """The plan as JSON."""
        data: dict[str, Any] = {
            "version": self.version,
            "rule": self.rule.to_dict(),
            "candidates": [candidate.to_dict() for candidate in self.candidates],
        }
        if self.recent is not None:
            data["batches_seen"] = self.recent.batches
        return data


class LifecycleWrites(SkillbookWrites):
    """The attempt of a lifecycle change, beside the store's other writes (it shares their steps)."""

    def change(
        self,
        pipe: Pipeline,
        action: LifecycleAction,
        skill_ids: Sequence[str],
        *,
        actor: str,
        reasons: Mapping[str, str],
        source_json: str,
        expected: Mapping[str, str] | None = None,
    ) -> LifecycleResult:
        """One attempt at applying ``action`` to ``skill_ids``, as one new version (or none).

        With ``expected`` (skill id -> the ``updated_at`` a prune found), a skill
        touched, pinned or no longer active since is skipped, not an error.
        """
        keys = self.keys
        watch_keys(pipe, keys.version)
        version = decode_int(pipe.get(keys.version))
        if version == 0:
            raise UnknownSkillbookError(self.name)
        reads = SkillReads(keys.skills)
        self._read_into(pipe, reads, skill_ids, ())
        unknown = [skill_id for skill_id in skill_ids if reads.skills[skill_id] is None]
        if unknown:
            raise UnknownSkillError(unknown[0], self.name)
        now = utc_now()
        changed: list[str] = []
        unchanged: list[str] = []
        skipped: dict[str, str] = {}
        after: dict[str, SkillImage] = {}
        for skill_id in skill_ids:
            skill = Skill.from_dict(reads.skills[skill_id] or {})
            if expected is not None:
                why = _no_longer_stale(skill, expected[skill_id])
                if why:
                    skipped[skill_id] = why
                    continue
            reason = reasons.get(skill_id, "")
            if change_lifecycle(skill, action, actor=actor, reason=reason, now=now, skillbook=self.name):
                changed.append(skill_id)
                # A JSON round trip, so that images compare equal to what Redis returns.
                after[skill_id] = json.loads(json.dumps(skill.to_dict()))
            else:
                unchanged.append(skill_id)
        if not changed:
            pipe.unwatch()
            return LifecycleResult(action.value, version, changed, unchanged, skipped)
        changes = {skill_id: (reads.skills[skill_id], after[skill_id]) for skill_id in changed}
        active, stored = self._read_active_skills(pipe, version)
        index_writes, missing = plan_index(changes, reads.fields)
        if missing:  # archive takes a skill out of the content index, restore puts it back
            self._read_into(pipe, reads, (), missing)
            index_writes, _ = plan_index(changes, reads.fields)
        orders, next_order = self._orders(pipe, reads, changed)
        self._begin_write(pipe, version)
        self._write_skills(pipe, changes, orders, index_writes)
        self._queue_active_skills(pipe, active, stored, changes)
        if next_order is not None:
            pipe.hset(keys.meta, META_NEXT_ORDER, next_order)
        self._end_write(
            pipe,
            version + 1,
            ChangeKind.LIFECYCLE,
            base_version=version,
            changes=changes,
            source_json=source_json,
        )
        pipe.execute()
        return LifecycleResult(action.value, version + 1, changed, unchanged, skipped)

    def _orders(
        self, pipe: Pipeline, reads: SkillReads, skill_ids: list[str]
    ) -> tuple[dict[str, int], int | None]:
        """Each skill's insertion order, and the next order number if one had to be issued.

        A skill keeps its order; one stored without (written by something else) goes last.
        """
        orders = {skill_id: reads.order[skill_id] for skill_id in skill_ids if skill_id in reads.order}
        unordered = [skill_id for skill_id in skill_ids if skill_id not in orders]
        if not unordered:
            return orders, None
        next_order = decode_int(pipe.hget(self.keys.meta, META_NEXT_ORDER))
        for skill_id in unordered:
            orders[skill_id], next_order = next_order, next_order + 1
        return orders, next_order


def _no_longer_stale(skill: Skill, found_updated_at: str) -> str:
    """Why a prune candidate must be left out now, or "" if it is still as it was found."""
    if skill.pinned:
        return "pinned since it was found stale"
    if not skill.is_active:
        return f"{skill.status} since it was found stale"
    if skill.updated_at != found_updated_at:
        return "tagged or updated since it was found stale"
    return ""


def _batch_of(record: ChangeRecord) -> str | None:
    """The batch a learning write came from (a worker's write scope names it), else None."""
    if record.kind not in (ChangeKind.APPLY, ChangeKind.CONSOLIDATE) or not isinstance(record.source, dict):
        return None
    batch = record.source.get("batch")
    return str(batch) if batch is not None else None


def _touched_by(record: ChangeRecord) -> set[str]:
    """The skills a version counts as used: those a learning write changed or added.

    A version of another kind counts the skills it brought back into the
    prompt (an import, a rollback, a restore): they start a new stale period.
    """
    if record.kind in (ChangeKind.APPLY, ChangeKind.CONSOLIDATE):
        return {skill_id for skill_id, image in record.after.items() if image is not None}
    return {
        skill_id
        for skill_id, image in record.after.items()
        if is_active(image) and not is_active(record.before.get(skill_id))
    }


def recent_touches(
    client: redis.Redis, keys: SkillbookKeys, batches: int, up_to_version: int
) -> RecentTouches:
    """The skills touched by the last ``batches`` batches up to ``up_to_version``, from the change log.

    Newest first, the entries back to where an (N+1)-th batch appears count.
    Entries of no batch (an import, a manual write) count only when a batch
    wrote before them, i.e. inside the span of the N batches.

    Raises:
        StaleHistoryError: the log was trimmed before ``batches`` batches were found.
    """
    seen: set[str] = set()
    touched: set[str] = set()
    pending: set[str] = set()
    oldest_version: int | None = None
    entries = (
        stream_newest_first(client, keys.changes, newest=stream_id(up_to_version)) if up_to_version else ()
    )
    for entry in entries:
        (record,) = records_of([entry], keys.changes)
        oldest_version = record.version
        batch = _batch_of(record)
        if batch is None:
            pending |= _touched_by(record)
            continue
        if batch not in seen:
            if len(seen) == batches:
                return RecentTouches(frozenset(touched), batches, complete=True)
            seen.add(batch)
        touched |= pending | _touched_by(record)
        pending.clear()
    if oldest_version not in (None, 1):
        raise StaleHistoryError(keys.name, batches, len(seen))
    # The whole history was read: it held the batches it held.
    return RecentTouches(frozenset(touched), len(seen), complete=len(seen) == batches)


class SkillbookLifecycle:
    """The lifecycle calls of one store: pin, unpin, archive, restore, archived, prune."""

    def __init__(
        self,
        client: redis.Redis,
        writes: SkillbookWrites,
        *,
        cas: CompareAndSet,
        snapshot: Callable[[], tuple[int, Skillbook]],
    ) -> None:
        self._redis = client
        self.keys = writes.keys
        self._writes = LifecycleWrites(
            client,
            writes.keys,
            changelog_maxlen=writes.changelog_maxlen,
            idempotency_ttl=writes.idempotency_ttl,
            max_skills=writes.max_skills,
        )
        self._cas = cas
        self._snapshot = snapshot

    def change(
        self, action: LifecycleAction, skill_ids: Iterable[str], *, actor: str | None, note: str
    ) -> LifecycleResult:
        """Apply ``action`` to the named skills as one version (none when nothing changes)."""
        ids = _checked_ids(skill_ids)
        who = check_actor(actor) if actor is not None else local_user_actor()
        source = {"action": action.value, "actor": who, "note": note, "skills": ids}
        source_json = dump_json(source, "source")
        reasons = dict.fromkeys(ids, note)
        return self._cas(
            action.value,
            lambda pipe: self._writes.change(
                pipe, action, ids, actor=who, reasons=reasons, source_json=source_json
            ),
        )

    def archived(self) -> list[Skill]:
        """The archived skills, in skillbook order."""
        version, book = self._snapshot()
        if version == 0:
            raise UnknownSkillbookError(self.keys.name)
        return [skill for skill in book.skills(include_invalid=True) if skill.is_archived]

    def plan_prune(self, rule: StaleRule, *, now: datetime | None = None) -> PrunePlan:
        """The skills stale by ``rule`` now (nothing changes)."""
        version, book = self._snapshot()
        if version == 0:
            raise UnknownSkillbookError(self.keys.name)
        recent = None
        if rule.batches is not None:
            recent = recent_touches(self._redis, self.keys, rule.batches, version)
        moment = now or datetime.now(UTC)
        candidates = find_stale_skills(book.skills(), rule, now=moment, recent=recent)
        return PrunePlan(version, rule, candidates, recent)

    def prune(
        self, rule: StaleRule, *, actor: str | None, note: str, now: datetime | None = None
    ) -> tuple[PrunePlan, LifecycleResult]:
        """Archive the skills stale by ``rule`` in one version; the plan and what was archived."""
        plan = self.plan_prune(rule, now=now)
        who = check_actor(actor) if actor is not None else PRUNE
        if not plan.candidates:
            return plan, LifecycleResult(LifecycleAction.ARCHIVE.value, plan.version, [], [])
        ids = [candidate.skill_id for candidate in plan.candidates]
        expected = {candidate.skill_id: candidate.last_touched for candidate in plan.candidates}
        reasons = {c.skill_id: f"{c.reason}{'; ' + note if note else ''}" for c in plan.candidates}
        source = {"action": "prune", "actor": who, "note": note, "rule": rule.to_dict(), "skills": ids}
        source_json = dump_json(source, "source")
        result = self._cas(
            "prune",
            lambda pipe: self._writes.change(
                pipe,
                LifecycleAction.ARCHIVE,
                ids,
                actor=who,
                reasons=reasons,
                source_json=source_json,
                expected=expected,
            ),
        )
        return plan, result


def _checked_ids(skill_ids: Iterable[str]) -> list[str]:
    """The ids, each once, in order; ValueError for none, or one that is not a non-empty string."""
    if isinstance(skill_ids, str):
        skill_ids = [skill_ids]
    ids = list(dict.fromkeys(skill_ids))
    if not ids:
        raise ValueError("name at least one skill id")
    for skill_id in ids:
        if not isinstance(skill_id, str) or not skill_id:
            raise ValueError(f"a skill id must be a non-empty string, got {skill_id!r}")
    return ids
