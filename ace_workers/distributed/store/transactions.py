"""The write transactions of a Redis skillbook: one attempt of each kind of write.

Each attempt WATCHes the version key, reads what the write depends on (the
pipeline runs reads at once while watching), then MULTI, writes, bumps the
version, appends the change-log entry and EXECs. A WatchError escapes to the
store's retry loop: nothing of the attempt was applied.
"""

from __future__ import annotations

import hashlib
import json
import logging
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, TypeVar

import redis
from redis.client import Pipeline
from redis.cluster import ClusterPipeline
from redis.exceptions import NoScriptError
from redis.typing import EncodableT, FieldT

from ...core.consolidation import (
    ConsolidationBatch,
    ConsolidationReport,
    apply_consolidation_operations,
    check_consolidation,
)
from ...core.skill import SimilarityDecision, Skill, utc_now
from ...core.skill_provenance import DEFAULT_KEEP
from ...core.skillbook import ApplyReport
from ...core.updates import UpdateBatch
from ...errors import one_line
from ..lua import read_lua
from .change_digest import STORED_DIGEST_CHANGES, stored_digest_json
from .changelog import (
    ChangeKind,
    ChangeRecord,
    SkillImage,
    decode_change,
    decode_change_of_skill,
    encode_change,
    images_at_start,
    require_contiguous,
    stream_id,
)
from .errors import (
    CorruptDataError,
    HeadMovedError,
    SkillbookExistsError,
    StoreError,
    UnknownSkillbookError,
    VersionRangeError,
)
from .keys import (
    META_CREATED_AT,
    META_INCARNATION,
    META_NEXT_ID,
    META_NEXT_ORDER,
    STAT_ADDS_SKIPPED_FULL,
    STAT_APPLIES,
    STAT_DUPLICATE_DELIVERIES,
    STAT_SKIPPED_OPS,
    STAT_STALE_APPLIES,
    SkillbookKeys,
    content_field,
    decision_field,
    registry_key,
)
from .planning import (
    ApplyPlan,
    Provenance,
    SkillReads,
    active_growth,
    adds_beyond_room,
    count_active,
    decode_stored_skill,
    encode_stored_skill,
    is_active,
    plan_batch,
    plan_index,
    provenance_writes,
    report_in_batch_indices,
    skill_order_key,
    split_provenance,
    without_operations,
)
from .replies import decode_int, decode_text, optional_text
from .review_policy import decode_policy, reviews_any

__all__ = [
    "META_ACTIVE_SKILLS",
    "CompareAndSet",
    "ImportPayload",
    "PreparedApply",
    "PreparedConsolidation",
    "SkillbookWrites",
    "StoreApplyResult",
    "StoreConsolidationResult",
    "consolidation_report",
    "read_changes",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")

# The first reads of an apply in one round trip (see the script and SkillbookWrites._read_first).
_APPLY_READS_LUA = read_lua(__name__, "apply_reads.lua")
_APPLY_READS_SHA = hashlib.sha1(_APPLY_READS_LUA.encode()).hexdigest()  # the name Redis knows it by
_MAX_PLAN_ROUNDS = 6  # read rounds of one apply attempt; two in practice
# Field of the meta hash: how many active skills the skillbook holds, kept by every write in
# its own MULTI, so an apply checks the size limit without counting the skills.
META_ACTIVE_SKILLS = "active_skills"


class CompareAndSet(Protocol):
    """The store's retry loop (``RedisSkillbookStore._cas``): runs an attempt until it commits.

    Each attempt gets a fresh pipeline; a lost race (WatchError) is retried with backoff,
    and VersionConflict is raised after the store's ``max_attempts``.
    """

    def __call__(self, operation: str, attempt: Callable[[Pipeline], T]) -> T:
        """Run ``attempt`` with a fresh pipeline, again after each lost race."""
        ...


@dataclass(frozen=True)
class StoreConsolidationResult:
    """What one consolidation did: the version it produced (or found) and its report."""

    version: int
    report: ConsolidationReport
    duplicate_delivery: bool


def consolidation_report(data: Mapping[str, Any]) -> ConsolidationReport:
    """A ConsolidationReport from its ``to_dict`` form."""
    return ConsolidationReport(
        merged={str(k): [str(i) for i in ids] for k, ids in data["merged"].items()},
        deleted=[str(i) for i in data["deleted"]],
        kept=[(str(a), str(b)) for a, b in data["kept"]],
        updated=[str(i) for i in data["updated"]],
    )


@dataclass(frozen=True)
class PreparedApply:
    """An apply planned under a WATCH, ready to be queued inside MULTI (SkillbookWrites.queue_apply)."""

    plan: ApplyPlan
    report: ApplyReport
    next_id: int  # as read: the plan moves them on
    next_order: int
    active: int  # active skills before the apply
    active_stored: bool  # whether the meta hash holds that count


@dataclass(frozen=True)
class PreparedConsolidation:
    """A consolidation checked and computed under a WATCH, ready to be queued inside MULTI."""

    report: ConsolidationReport
    changes: dict[str, tuple[SkillImage, SkillImage]]
    orders: dict[str, int]  # insertion order of the skills read
    index_writes: dict[str, list[str]]
    decisions: dict[str, str]  # similarity decisions (KEEP) to record, by pair field
    active: int
    active_stored: bool
    provenance: dict[str, Provenance | None]  # the skills' provenance to write (None: delete it)


@dataclass(frozen=True)
class StoreApplyResult:
    """What one apply did: the version it produced (or found), its report, and how it was delivered."""

    version: int
    report: ApplyReport
    duplicate_delivery: bool
    stale: bool


def read_changes(
    client: redis.Redis, keys: SkillbookKeys, from_version: int, to_version: int
) -> list[ChangeRecord]:
    """The change records of versions (from_version, to_version], oldest first, checked complete."""
    entries = client.xrange(keys.changes, min=stream_id(from_version + 1), max=stream_id(to_version))
    records = records_of(entries, keys.changes)
    require_contiguous(keys.name, records, from_version + 1, to_version)
    return records


class SkillbookWrites:
    """The attempts of every write to one skillbook, run by the store inside its retry loop."""

    def __init__(
        self,
        client: redis.Redis,
        keys: SkillbookKeys,
        *,
        changelog_maxlen: int,
        idempotency_ttl: int,
        max_skills: int,
        provenance_keep: int = DEFAULT_KEEP,
    ) -> None:
        self._redis = client
        self.keys = keys
        self.changelog_maxlen = changelog_maxlen
        self.idempotency_ttl = idempotency_ttl
        self.max_skills = max_skills
        self.provenance_keep = provenance_keep

    @property
    def name(self) -> str:
        """The skillbook's name."""
        return self.keys.name

    def apply(
        self,
        pipe: Pipeline,
        batch: UpdateBatch,
        base_version: int | None,
        idempotency_key: str | None,
        batch_json: str,
        source_json: str,
        *,
        unless_reviewed: bool = False,
    ) -> StoreApplyResult | None:
        """One attempt at applying ``batch``, or the recorded result if its key was applied already.

        ``unless_reviewed``: read the review policy with the version, under the same WATCH, and
        apply nothing (None) if it reviews an operation of ``batch``: the caller splits it. A
        writer under the auto policy so spends no round trip on reading it.
        """
        keys = self.keys
        idem_key = keys.idempotency(idempotency_key) if idempotency_key is not None else None
        watched = [keys.version, *([idem_key] if idem_key else [])]
        if unless_reviewed:
            watched.append(keys.review_policy)
        watch_keys(pipe, *watched)
        reads = SkillReads(keys.skills)
        if watching_runs_scripts(pipe):
            # The watched keys are read with the plan's first reads: one round trip where two were.
            meta, (raw_version, *read) = self._read_first(pipe, batch, reads, watched)
            first: tuple[list[Any], SkillReads] | None = (meta, reads)
        else:
            first = None
            raw_version, *read = read_watched(pipe, watched)
        version = decode_int(raw_version)
        if idem_key is not None and read[0] is not None:
            pipe.unwatch()
            return self._duplicate_delivery(idempotency_key, read[0])
        if unless_reviewed and reviews_any(decode_policy(read[-1], keys.review_policy), batch):
            pipe.unwatch()
            return None
        prepared = self.prepare_apply(pipe, batch, version, first=first)
        report = prepared.report
        stale = self._is_stale(base_version, version)
        new_version = version + 1
        self._begin_write(pipe, version)
        self.queue_apply(pipe, prepared)
        self._end_write(
            pipe,
            new_version,
            ChangeKind.APPLY,
            base_version=base_version,
            batch_json=batch_json,
            changes=prepared.plan.changes,
            source_json=source_json,
            idempotency_key=idempotency_key,
        )
        if idem_key is not None:
            pipe.set(idem_key, encode_recorded(new_version, stale, report), ex=self.idempotency_ttl)
        pipe.hincrby(keys.stats, STAT_APPLIES, 1)
        if stale:
            pipe.hincrby(keys.stats, STAT_STALE_APPLIES, 1)
        if report.skipped_ops:
            pipe.hincrby(keys.stats, STAT_SKIPPED_OPS, report.skipped_ops)
        if report.full:
            pipe.hincrby(keys.stats, STAT_ADDS_SKIPPED_FULL, len(report.full))
        pipe.execute()
        return StoreApplyResult(new_version, report, duplicate_delivery=False, stale=stale)

    def prepare_apply(
        self,
        pipe: Pipeline,
        batch: UpdateBatch,
        version: int,
        *,
        first: tuple[list[Any], SkillReads] | None = None,
    ) -> PreparedApply:
        """Under the WATCH of ``version``: read what ``batch`` depends on and plan it (nothing written).

        ``first``: the meta fields and the reads :meth:`_read_first` made for ``batch`` under this
        WATCH already (they are not read again).
        """
        if first is not None:
            (raw_next_id, raw_next_order, raw_active), reads = first
        elif watching_runs_scripts(pipe):
            reads = SkillReads(self.keys.skills)
            (raw_next_id, raw_next_order, raw_active), _ = self._read_first(pipe, batch, reads)
        else:
            reads = SkillReads(self.keys.skills)
            raw_next_id, raw_next_order, raw_active = pipe.hmget(
                self.keys.meta, [META_NEXT_ID, META_NEXT_ORDER, META_ACTIVE_SKILLS]
            )
        next_id, next_order = decode_int(raw_next_id) or 1, decode_int(raw_next_order)
        active = self._active_skills(pipe, version, raw_active)
        plan, report = self._plan_within_limit(pipe, batch, version, next_id, next_order, active, reads)
        return PreparedApply(plan, report, next_id, next_order, active, raw_active is not None)

    def _read_first(
        self, pipe: Pipeline, batch: UpdateBatch, reads: SkillReads, values_of: list[str] | None = None
    ) -> tuple[list[Any], list[Any]]:
        """The meta fields an apply plans with, and into ``reads`` the skills ``batch`` names (with their
        provenance) and its ADDs' index fields; with the values of the string keys ``values_of`` (the
        watched ones). One round trip (apply_reads.lua) where five were.

        Not on a cluster pipeline, whose WATCH mode runs no script: it reads them one by one.
        """
        ids = sorted({op.skill_id for op in batch.operations if op.skill_id})
        fields = sorted(
            {content_field(op.section.strip(), op.content) for op in batch.operations if op.type == "ADD"}
        )
        return self._run_reads(pipe, reads, ids, fields, values_of or [])

    def _run_reads(
        self, pipe: Pipeline, reads: SkillReads, ids: list[str], fields: list[str], values_of: list[str]
    ) -> tuple[list[Any], list[Any]]:
        """apply_reads.lua on the watching ``pipe``: ``ids``' skills and provenance and the index
        ``fields`` into ``reads``; returns the meta fields and the values of the keys ``values_of``."""
        keys = self.keys
        script_keys = [keys.meta, keys.skills, keys.provenance, keys.content, *values_of]
        args: list[EncodableT] = [*script_keys, len(ids), *ids, *fields]
        # EVALSHA on the watching pipeline itself (it runs at once), not through a Script object:
        # that would make the pipeline check its scripts at EXEC, a round trip more.
        try:
            reply = pipe.evalsha(_APPLY_READS_SHA, len(script_keys), *args)
        except NoScriptError:
            pipe.script_load(_APPLY_READS_LUA)  # a server that has not seen it (or was restarted)
            reply = pipe.evalsha(_APPLY_READS_SHA, len(script_keys), *args)
        meta, skills, provenance, index, values = reply
        for skill_id, raw_skill, raw_provenance in zip(ids, skills, provenance, strict=True):
            reads.add_skill(skill_id, raw_skill)
            reads.add_provenance(skill_id, raw_provenance, keys.provenance)
        for field_name, raw in zip(fields, index, strict=True):
            reads.fields[field_name] = json.loads(raw) if raw is not None else []
        return list(meta), list(values)

    def queue_apply(self, pipe: Pipeline, prepared: PreparedApply) -> None:
        """Inside MULTI: write the skills, index entries and counters a prepared apply changes."""
        plan = prepared.plan
        growth = active_growth(plan.changes)
        self._write_skills(pipe, plan.changes, plan.orders, plan.index_writes, plan.provenance)
        meta: dict[FieldT, EncodableT] = {}
        if (plan.next_id, plan.next_order) != (prepared.next_id, prepared.next_order):
            meta.update({META_NEXT_ID: plan.next_id, META_NEXT_ORDER: plan.next_order})
        if growth or not prepared.active_stored:
            meta[META_ACTIVE_SKILLS] = prepared.active + growth
        if meta:
            pipe.hset(self.keys.meta, mapping=meta)

    def _plan_within_limit(
        self,
        pipe: Pipeline,
        batch: UpdateBatch,
        version: int,
        next_id: int,
        next_order: int,
        active: int,
        reads: SkillReads,
    ) -> tuple[ApplyPlan, ApplyReport]:
        """Plan ``batch``, leaving out the ADDs that would take the skillbook above ``max_skills``.

        The rest of the batch (TAG, UPDATE, REMOVE, ADDs that fit) still applies:
        learning which skills help must not stop because the book is full. Each
        round leaves out as many adding ADDs as the plan overshoots by; another
        round is needed only when a left-out ADD was restated later in the batch.
        """
        kept = list(range(len(batch.operations)))
        full: list[int] = []
        planned = batch
        plan = self._plan(pipe, planned, version, next_id, next_order, reads)
        while (excess := active + active_growth(plan.changes) - self.max_skills) > 0:
            dropped = adds_beyond_room(planned, plan.report, excess)
            if not dropped:
                break  # over the limit already (it was lowered): the rest adds nothing
            full += [kept[i] for i in dropped]
            kept = [index for position, index in enumerate(kept) if position not in set(dropped)]
            planned = without_operations(batch, kept)
            plan = self._plan(pipe, planned, version, next_id, next_order, reads)
        if not full:
            return plan, plan.report
        return plan, report_in_batch_indices(plan.report, kept, full)

    def _active_skills(self, pipe: Pipeline, version: int, raw: bytes | str | None) -> int:
        """The active-skill count the meta hash holds (``raw``), or counted once if it holds none."""
        if raw is not None:
            return int(raw)
        if version == 0:
            return 0
        # Written before the count was kept: count it once (O(skills)); this write stores it.
        logger.info("skillbook %r: counting its active skills once, to keep the count", self.name)
        return count_active(pipe.hgetall(self.keys.skills), self.keys.skills)

    def _read_active_skills(self, pipe: Pipeline, version: int) -> tuple[int, bool]:
        """The active-skill count under the current WATCH, and whether the meta hash holds it."""
        raw = pipe.hget(self.keys.meta, META_ACTIVE_SKILLS)
        return self._active_skills(pipe, version, raw), raw is not None

    def _queue_active_skills(
        self, pipe: Pipeline, active: int, stored: bool, changes: Mapping[str, tuple[SkillImage, SkillImage]]
    ) -> None:
        """Inside MULTI: store the count as ``changes`` leave it (unless unchanged and stored)."""
        growth = active_growth(changes)
        if growth or not stored:
            pipe.hset(self.keys.meta, META_ACTIVE_SKILLS, active + growth)

    def _is_stale(self, base_version: int | None, version: int) -> bool:
        if base_version is not None and base_version > version:
            logger.warning(
                "skillbook %r: a batch claims base version %d, newer than the current %d "
                "(was the skillbook deleted and recreated?)",
                self.name,
                base_version,
                version,
            )
        return is_stale(base_version, version)

    def _duplicate_delivery(self, idempotency_key: str | None, recorded: bytes | str) -> StoreApplyResult:
        self._redis.hincrby(self.keys.stats, STAT_DUPLICATE_DELIVERIES, 1)
        result = decode_recorded(recorded)
        logger.info(
            "skillbook %r: idempotency key %r was already applied as version %d; not applying again",
            self.name,
            idempotency_key,
            result.version,
        )
        return result

    def _plan(
        self,
        pipe: Pipeline,
        batch: UpdateBatch,
        version: int,
        next_id: int,
        next_order: int,
        reads: SkillReads,
    ) -> ApplyPlan:
        """Read what ``batch`` depends on, round by round, until its plan is complete.

        ``reads``: what was read under this WATCH already (shared by the rounds of one attempt:
        the values cannot have changed); only what it lacks is read.
        """
        self._read_into(
            pipe,
            reads,
            {op.skill_id for op in batch.operations if op.skill_id},
            {content_field(op.section.strip(), op.content) for op in batch.operations if op.type == "ADD"},
        )
        plan = plan_batch(batch, reads, next_id, next_order, self.provenance_keep)
        for _ in range(_MAX_PLAN_ROUNDS):
            if plan.complete:
                return plan
            if self._read_into(pipe, reads, plan.missing_ids, plan.missing_fields):
                plan = plan_batch(batch, reads, next_id, next_order, self.provenance_keep)
            else:
                # Only absent ids and index fields were new: the outcome stands, the index writes follow.
                plan = plan.with_index(*plan_index(plan.changes, reads.fields))
        if decode_int(pipe.get(self.keys.version)) != version:
            # The ids it allocated kept turning up taken: other writers are committing. Retry afresh.
            raise redis.WatchError(f"skillbook {self.name!r} changed while the batch was planned")
        raise StoreError(f"skillbook {self.name!r}: could not plan the batch in {_MAX_PLAN_ROUNDS} reads")

    def consolidate(
        self,
        pipe: Pipeline,
        batch: ConsolidationBatch,
        idempotency_key: str | None,
        batch_json: str,
        source_json: str,
    ) -> StoreConsolidationResult:
        """One attempt at applying a deduplication batch: all of it as one new version, or nothing.

        Reads only the skills the batch names (and the index fields their
        changes move), checks the batch against them with the core's rules,
        and runs the core's arithmetic on just those skills.
        """
        keys = self.keys
        idem_key = keys.idempotency(idempotency_key) if idempotency_key is not None else None
        watched = [keys.version, *([idem_key] if idem_key else [])]
        watch_keys(pipe, *watched)
        raw_version, *recorded = read_watched(pipe, watched)
        if recorded and recorded[0] is not None:
            pipe.unwatch()
            self._redis.hincrby(keys.stats, STAT_DUPLICATE_DELIVERIES, 1)
            data = json.loads(recorded[0])
            return StoreConsolidationResult(int(data["version"]), consolidation_report(data["report"]), True)
        version = decode_int(raw_version)
        if version == 0:
            raise UnknownSkillbookError(self.name)
        prepared = self.prepare_consolidation(pipe, batch, version)
        report = prepared.report
        new_version = version + 1
        self._begin_write(pipe, version)
        self.queue_consolidation(pipe, prepared)
        self._end_write(
            pipe,
            new_version,
            ChangeKind.CONSOLIDATE,
            base_version=version,
            batch_json=batch_json,
            changes=prepared.changes,
            source_json=source_json,
            idempotency_key=idempotency_key,
        )
        if idem_key is not None:
            recorded_json = json.dumps({"version": new_version, "report": report.to_dict()})
            pipe.set(idem_key, recorded_json, ex=self.idempotency_ttl)
        pipe.execute()
        return StoreConsolidationResult(new_version, report, duplicate_delivery=False)

    def prepare_consolidation(
        self, pipe: Pipeline, batch: ConsolidationBatch, version: int
    ) -> PreparedConsolidation:
        """Under the WATCH of ``version``: read the skills ``batch`` names, check it, compute its changes.

        Raises InvalidConsolidationError (nothing written) when the batch names a skill
        that is gone, or one rewritten since the batch was planned.
        """
        active, stored = self._read_active_skills(pipe, version)
        reads = SkillReads(self.keys.skills)
        self._read_into(pipe, reads, batch.named_ids(), ())
        skills = {
            i: Skill.from_dict(reads.whole(i)) for i, image in reads.skills.items() if image is not None
        }
        check_consolidation(batch.operations, skills, batch.planned_contents)
        decisions: dict[str, str] = {}

        def record_decision(id_a: str, id_b: str, decision: SimilarityDecision) -> None:
            decisions[decision_field(id_a, id_b)] = json.dumps(decision.to_dict())

        report = apply_consolidation_operations(
            batch.operations, skills, record_decision, keep=self.provenance_keep
        )
        # A JSON round trip, so that images compare equal to what Redis returns.
        split = {i: split_provenance(json.loads(json.dumps(skill.to_dict()))) for i, skill in skills.items()}
        after: dict[str, SkillImage] = {i: image for i, (image, _) in split.items()}
        changes = {i: (reads.skills[i], image) for i, image in after.items() if image != reads.skills[i]}
        provenance = provenance_writes(reads.provenance, {i: prov for i, (_, prov) in split.items()})
        index_writes, missing = plan_index(changes, reads.fields)
        if missing:
            self._read_into(pipe, reads, (), missing)
            index_writes, _ = plan_index(changes, reads.fields)
        return PreparedConsolidation(
            report, changes, reads.order, index_writes, decisions, active, stored, provenance
        )

    def queue_consolidation(self, pipe: Pipeline, prepared: PreparedConsolidation) -> None:
        """Inside MULTI: write the skills, index entries, counters and decisions a consolidation changes."""
        self._write_skills(
            pipe, prepared.changes, prepared.orders, prepared.index_writes, prepared.provenance
        )
        self._queue_active_skills(pipe, prepared.active, prepared.active_stored, prepared.changes)
        if prepared.decisions:
            pipe.hset(self.keys.decisions, mapping=as_fields(prepared.decisions))

    def rollback(self, pipe: Pipeline, to_version: int, source_json: str, expect: int | None = None) -> int:
        """One attempt at restoring every skill touched after ``to_version``, as a new version."""
        watch_keys(pipe, self.keys.version)
        version = decode_int(pipe.get(self.keys.version))
        if version == 0:
            raise UnknownSkillbookError(self.name)
        if expect is not None and expect != version:
            raise HeadMovedError(self.name, expect, version)
        if to_version > version:
            raise VersionRangeError(
                f"skillbook {self.name!r}: cannot roll back to version {to_version}, "
                f"the current version is {version}",
                name=self.name,
                current=version,
                requested=(to_version,),
            )
        if to_version == version:
            pipe.unwatch()
            return version
        targets = images_at_start(read_changes(pipe, self.keys, to_version, version))
        next_order = decode_int(pipe.hget(self.keys.meta, META_NEXT_ORDER))
        # Not held to the size limit: a rollback restores a state the skillbook had.
        active, stored = self._read_active_skills(pipe, version)
        reads = SkillReads(self.keys.skills)
        self._read_into(pipe, reads, targets, ())
        changes = {
            skill_id: (reads.skills[skill_id], target)
            for skill_id, target in sorted(targets.items(), key=lambda item: skill_order_key(item[0]))
            if reads.skills[skill_id] != target
        }
        # A skill that exists keeps its place; a restored one is inserted anew, at the end.
        orders: dict[str, int] = {}
        for skill_id, (_, target) in changes.items():
            if target is None:
                continue
            if skill_id in reads.order:
                orders[skill_id] = reads.order[skill_id]
            else:
                orders[skill_id], next_order = next_order, next_order + 1
        index_writes, missing = plan_index(changes, reads.fields)
        if missing:
            self._read_into(pipe, reads, (), missing)
            index_writes, _ = plan_index(changes, reads.fields)
        self._begin_write(pipe, version)
        self._write_skills(pipe, changes, orders, index_writes)
        self._queue_active_skills(pipe, active, stored, changes)
        pipe.hset(self.keys.meta, META_NEXT_ORDER, next_order)
        self._end_write(
            pipe,
            version + 1,
            ChangeKind.ROLLBACK,
            base_version=version,
            changes=changes,
            source_json=source_json,
        )
        pipe.execute()
        return version + 1

    def import_skillbook(
        self, pipe: Pipeline, payload: ImportPayload, replace: bool, source_json: str
    ) -> int:
        """One attempt at replacing the whole skillbook with ``payload``, as a new version."""
        keys = self.keys
        watch_keys(pipe, keys.version)
        version = decode_int(pipe.get(keys.version))
        if version and not replace:
            raise SkillbookExistsError(self.name, version)
        stored = pipe.hgetall(keys.skills) if version else {}
        old = {
            decode_text(k): decode_stored_skill(v, keys.skills, decode_text(k))[0] for k, v in stored.items()
        }
        next_id = max(decode_int(pipe.hget(keys.meta, META_NEXT_ID)) or 1, payload.next_id)
        changes = {
            skill_id: (old.get(skill_id), payload.skills.get(skill_id))
            for skill_id in sorted(old.keys() | payload.skills.keys(), key=skill_order_key)
            if old.get(skill_id) != payload.skills.get(skill_id)
        }
        self._begin_write(pipe, version)
        pipe.delete(keys.skills, keys.content, keys.decisions, keys.provenance)
        if payload.skills:
            values = {i: encode_stored_skill(s, order) for order, (i, s) in enumerate(payload.skills.items())}
            pipe.hset(keys.skills, mapping=as_fields(values))
        if payload.provenance:
            pipe.hset(
                keys.provenance,
                mapping=as_fields(
                    {i: json.dumps(p, ensure_ascii=False) for i, p in payload.provenance.items()}
                ),
            )
        if payload.index:
            pipe.hset(
                keys.content, mapping=as_fields({f: json.dumps(ids) for f, ids in payload.index.items()})
            )
        if payload.decisions:
            pipe.hset(keys.decisions, mapping=as_fields(payload.decisions))
        active = sum(is_active(image) for image in payload.skills.values())
        pipe.hset(
            keys.meta,
            mapping={META_NEXT_ID: next_id, META_NEXT_ORDER: len(payload.skills), META_ACTIVE_SKILLS: active},
        )
        self._end_write(pipe, version + 1, ChangeKind.IMPORT, changes=changes, source_json=source_json)
        pipe.execute()
        return version + 1

    def set_decision(self, pipe: Pipeline, field: str, value: str, source_json: str) -> int:
        """Record one similarity decision as a new version."""
        watch_keys(pipe, self.keys.version)
        version = decode_int(pipe.get(self.keys.version))
        self._begin_write(pipe, version)
        pipe.hset(self.keys.decisions, field, value)
        self._end_write(pipe, version + 1, ChangeKind.DECISION, source_json=source_json)
        pipe.execute()
        return version + 1

    def _begin_write(self, pipe: Pipeline, version: int) -> None:
        """Register a new skillbook's name, then start the transaction."""
        if version == 0:
            # The registry is the one cross-slot key, so it is written outside the transaction,
            # before it: a crash in between leaves a listed but empty skillbook, never a lost one.
            self._redis.sadd(registry_key(self.keys.prefix), self.name)
        pipe.multi()

    def _end_write(
        self,
        pipe: Pipeline,
        new_version: int,
        kind: ChangeKind,
        *,
        base_version: int | None = None,
        batch_json: str = "",
        changes: Mapping[str, tuple[SkillImage, SkillImage]] | None = None,
        source_json: str = "null",
        idempotency_key: str | None = None,
    ) -> None:
        """Queue the version bump and the change-log entry of ``new_version``."""
        keys = self.keys
        changes = changes or {}
        pipe.incr(keys.version)
        if new_version == 1:
            # A new incarnation (first write, or first since delete()): cached snapshots of an
            # earlier one, which counted versions from 1 too, can never be mistaken for it.
            pipe.hset(keys.meta, mapping={META_CREATED_AT: utc_now(), META_INCARNATION: uuid.uuid4().hex})
        before = {skill_id: old for skill_id, (old, _) in changes.items()}
        after = {skill_id: new for skill_id, (_, new) in changes.items()}
        fields = encode_change(
            version=new_version,
            base_version=base_version,
            kind=kind,
            time=utc_now(),
            batch_json=batch_json,
            before=before,
            after=after,
            source_json=source_json,
            idempotency_key=idempotency_key,
        )
        pipe.xadd(
            keys.changes,
            as_fields(fields),
            id=stream_id(new_version),
            maxlen=self.changelog_maxlen,
            approximate=True,
        )
        if len(changes) >= STORED_DIGEST_CHANGES:  # an import: its readers need not decode every image
            pipe.hset(keys.change_digests, str(new_version), stored_digest_json(fields, before, after))

    def _write_skills(
        self,
        pipe: Pipeline,
        changes: Mapping[str, tuple[SkillImage, SkillImage]],
        orders: Mapping[str, int],
        index_writes: Mapping[str, list[str]],
        provenance: Mapping[str, Provenance | None] | None = None,
    ) -> None:
        """Queue the skills' writes, their content-index fields and provenance (None: delete it).

        A skill that goes away takes its provenance with it (as in the core, where it lives on the
        skill); a rollback that restores a skill leaves the provenance the skill has.
        """
        keys = self.keys
        upserts = {
            i: encode_stored_skill(new, orders[i]) for i, (_, new) in changes.items() if new is not None
        }
        removals = [i for i, (_, new) in changes.items() if new is None]
        if upserts:
            pipe.hset(keys.skills, mapping=as_fields(upserts))
        if removals:
            pipe.hdel(keys.skills, *removals)
        gone = set(removals) | {i for i, value in (provenance or {}).items() if value is None}
        kept = {i: json.dumps(value, ensure_ascii=False) for i, value in (provenance or {}).items() if value}
        if kept:
            pipe.hset(keys.provenance, mapping=as_fields(kept))
        if gone - kept.keys():
            pipe.hdel(keys.provenance, *sorted(gone - kept.keys()))
        index_sets = {f: json.dumps(ids) for f, ids in index_writes.items() if ids}
        index_removals = [f for f, ids in index_writes.items() if not ids]
        if index_sets:
            pipe.hset(keys.content, mapping=as_fields(index_sets))
        if index_removals:
            pipe.hdel(keys.content, *index_removals)

    def _read_into(
        self, pipe: Pipeline, reads: SkillReads, ids: Iterable[str], fields: Iterable[str]
    ) -> bool:
        """Read the skills and index fields ``reads`` does not hold yet (one round trip; on a cluster
        pipeline, which runs no script under WATCH, one HMGET each).

        Returns True if one of the skills read exists.
        """
        found = False
        wanted_ids = sorted(set(ids) - reads.skills.keys())
        wanted_fields = sorted(set(fields) - reads.fields.keys())
        if watching_runs_scripts(pipe):
            if wanted_ids or wanted_fields:
                self._run_reads(pipe, reads, wanted_ids, wanted_fields, [])
            return any(reads.skills[skill_id] is not None for skill_id in wanted_ids)
        if wanted_ids:
            for skill_id, raw in zip(wanted_ids, pipe.hmget(self.keys.skills, wanted_ids), strict=True):
                reads.add_skill(skill_id, raw)
                found = found or raw is not None
            provenance = pipe.hmget(self.keys.provenance, wanted_ids)
            for skill_id, raw in zip(wanted_ids, provenance, strict=True):
                reads.add_provenance(skill_id, raw, self.keys.provenance)
        if wanted_fields:
            for field, raw in zip(wanted_fields, pipe.hmget(self.keys.content, wanted_fields), strict=True):
                reads.fields[field] = json.loads(raw) if raw is not None else []
        return found


@dataclass(frozen=True)
class ImportPayload:
    """A skillbook prepared for import: skills (without provenance), decisions, content index, next id
    number, and the skills' provenance."""

    skills: dict[str, dict[str, Any]]
    decisions: dict[str, str]
    index: dict[str, list[str]]
    next_id: int
    provenance: dict[str, Provenance] = field(default_factory=dict)


def watch_keys(pipe: Pipeline, *keys: str) -> None:
    """WATCH ``keys`` on ``pipe``: its later reads run at once, its writes wait for MULTI."""
    pipe.watch(*keys)  # type: ignore[no-untyped-call]  # redis-py leaves watch() unannotated


def watching_runs_scripts(pipe: object) -> bool:
    """True unless ``pipe`` is a cluster pipeline, whose WATCH mode runs no script (redis-py's typing
    makes every store pipeline a plain one, hence ``object``)."""
    return not isinstance(pipe, ClusterPipeline)


def read_watched(pipe: Pipeline | ClusterPipeline, keys: list[str]) -> list[Any]:
    """The values of watched ``keys``: one MGET, or a GET each where a cluster pipeline refuses MGET.

    (redis-py's cluster pipeline blocks multi-key reads even within one hash slot.)
    """
    if isinstance(pipe, ClusterPipeline):
        return [pipe.get(key) for key in keys]
    return list(pipe.mget(keys))


_SHOWN_PROBLEM_CHARS = 200  # of why a change-log entry cannot be read


def records_of(entries: Any, key: str) -> list[ChangeRecord]:
    """Change records from an XRANGE/XREVRANGE reply of the change log ``key``.

    Raises:
        CorruptDataError: an entry is not a change record as encode_change writes one.
    """
    return [_decoded(entry_id, fields, key, decode_change) for entry_id, fields in entries or []]


def records_touching(entries: Iterable[Any], key: str, skill_id: str) -> list[ChangeRecord]:
    """records_of() the entries that touched ``skill_id``, each with that skill's images alone.

    Entries that do not are passed over without decoding (decode_change_of_skill).
    """
    found = []
    for entry_id, fields in entries:
        record = _decoded(entry_id, fields, key, lambda f: decode_change_of_skill(f, skill_id))
        if record is not None:
            found.append(record)
    return found


def _decoded(entry_id: Any, fields: Any, key: str, decode: Callable[[Any], T]) -> T:
    """``decode(fields)``, a malformed entry raising CorruptDataError naming ``key`` and the entry."""
    try:
        return decode(fields)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:  # JSON, pydantic, int(), enum
        # One line, however many a pydantic error spans.
        problem = one_line(exc)[:_SHOWN_PROBLEM_CHARS] or type(exc).__name__
        raise CorruptDataError(
            key, f"entry {optional_text(entry_id)} is not a change record ({problem})"
        ) from None


def as_fields(values: Mapping[str, str]) -> dict[FieldT, EncodableT]:
    """A str -> str mapping as the field/value mapping redis-py's hset and xadd are annotated with."""
    fields: dict[FieldT, EncodableT] = {}
    fields.update(values)
    return fields


def is_stale(base_version: int | None, version: int) -> bool:
    """True when the batch was computed on a version older than the current one."""
    return base_version is not None and base_version < version


def encode_recorded(version: int, stale: bool, report: ApplyReport) -> str:
    """What an idempotency key records: enough to answer a second delivery as the first was answered."""
    return json.dumps({"version": version, "stale": stale, "report": asdict(report)})


def decode_recorded(raw: bytes | str) -> StoreApplyResult:
    """The result an idempotency key recorded, marked as a duplicate delivery."""
    data = json.loads(raw)
    report = data["report"]
    return StoreApplyResult(
        version=int(data["version"]),
        report=ApplyReport(
            added=list(report["added"]),
            updated=list(report["updated"]),
            tagged=list(report["tagged"]),
            removed=list(report["removed"]),
            skipped=[(int(i), str(t), str(s)) for i, t, s in report["skipped"]],
            duplicates=[(int(i), str(s)) for i, s in report["duplicates"]],
            full=[int(i) for i in report.get("full", [])],  # absent in records of older versions
            pinned=[(int(i), str(s)) for i, s in report.get("pinned", [])],
        ),
        duplicate_delivery=True,
        stale=bool(data["stale"]),
    )


def dump_json(value: Any, what: str) -> str:
    """``value`` as JSON; TypeError naming ``what`` if it cannot be serialised."""
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{what} must be JSON-serialisable: {exc}") from exc
