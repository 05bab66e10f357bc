"""The write transactions of review: one attempt each at proposing, deciding, and setting the policy.

Same shape as every skillbook write (transactions.py): WATCH the version, read,
MULTI, write, EXEC; a WatchError escapes to the store's retry loop. A decision
and a policy change bump the version and append a REVIEW entry to the change
log; storing a proposal changes no skill, so it makes no version (readers'
snapshots stay valid) and is guarded by its own idempotency key instead.

Every change of a proposal's status bumps the decisions counter (and the version,
when it changes skills), so WATCHing the counter guards the proposal's state: of two
reviewers deciding one proposal at once, the second's EXEC fails, it reads again and
finds the proposal decided. Approving a proposal that changes no skill (it restates
active skills) makes no version: nothing a reader caches changed.

An open proposal is named by its signature key (``proposal_signature``): a write
proposing the same operations merges into it. Every write that changes that
proposal (a merge, a decision) also writes its signature key, which the others
WATCH: of two workers proposing the same at once, one stores it and the other,
retried, merges into it; a merge and a decision never overwrite each other.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import redis
from redis.client import Pipeline

from ...core.skill import utc_now
from ...core.updates import UpdateBatch
from ...counts import noun_for
from .changelog import CONSOLIDATION_MARK, ChangeKind, SkillImage
from .errors import ProposalConflictError, ProposalDecidedError, UnknownProposalError
from .keys import STAT_APPLIES, STAT_SKIPPED_OPS, SkillbookKeys, content_field
from .planning import SkillReads
from .proposals import (
    Decision,
    Proposal,
    ProposalKind,
    ProposalStatus,
    decode_proposal,
    signature_digest,
    substance_changed,
)
from .replies import decode_int, decode_json, optional_text
from .transactions import SkillbookWrites, dump_json, read_watched, watch_keys

__all__ = ["AUTO_APPROVE_ACTOR", "AUTO_REJECT_ACTOR", "ProposeOutcome", "ReviewWrites", "restated_skills"]

AUTO_APPROVE_ACTOR = "auto-approve"
AUTO_REJECT_ACTOR = "auto-reject"
Changes = dict[str, tuple[SkillImage, SkillImage]]


@dataclass(frozen=True)
class PreparedChanges:
    """An approval planned under the WATCH: the skills it changes, and what queues it inside MULTI."""

    changes: Changes
    queue: Callable[[], None]
    changes_anything: bool  # False: it restates what the skills say (no version is made)


@dataclass(frozen=True)
class ProposeOutcome:
    """What storing a proposal did: its id, whether it was stored before, and an auto-approval's version."""

    proposal_id: str
    duplicate_delivery: bool
    auto_approved_version: int | None = None
    agreeing: list[str] = field(default_factory=list)
    merged: bool = False  # it joined an open proposal of the same operations (proposal_id is that one)
    count: int = 1  # how many writes that proposal counts now
    auto_rejected: list[str] = field(default_factory=list)  # rejected at once: the skills it restates


def restated_skills(client: redis.Redis | Pipeline, keys: SkillbookKeys, proposal: Proposal) -> list[str]:
    """The active skills an all-ADD proposal restates, one per ADD; [] if one says something new.

    ``client`` is a Redis client, or a pipeline under WATCH (its reads run at once).
    """
    ops = proposal.operations
    if proposal.kind is not ProposalKind.UPDATE or not ops or any(op.get("type") != "ADD" for op in ops):
        return []
    fields = [content_field(str(op.get("section") or "").strip(), str(op.get("content") or "")) for op in ops]
    restated = []
    for name, raw in zip(fields, client.hmget(keys.content, fields), strict=True):
        ids = decode_json(raw, keys.content, name) if raw is not None else []
        if not ids:
            return []
        restated.append(str(ids[0]))
    return restated


class ReviewWrites(SkillbookWrites):
    """The attempts of every review write to one skillbook, run inside the store's retry loop."""

    # -- proposing ---------------------------------------------------------------------
    def propose(
        self,
        pipe: Pipeline,
        draft: Proposal,
        idempotency_key: str,
        auto_approve_after: int | None,
        reject_duplicates: bool = False,
    ) -> ProposeOutcome:
        """One attempt at storing ``draft``, merging it into an open proposal of the same operations,
        or finding it stored already.

        With ``auto_approve_after`` N, a proposal that N writes proposed applies now, once.
        With ``reject_duplicates``, one that only restates active skills is rejected at once.
        """
        keys = self.keys
        idem_key = keys.idempotency(f"proposal:{idempotency_key}")
        same_key = keys.proposal_signature(signature_digest(draft))
        watch_keys(pipe, keys.version, keys.proposal_decisions, idem_key, same_key)
        raw_version, recorded, same_id = read_watched(pipe, [keys.version, idem_key, same_key])
        if recorded is not None or pipe.hexists(keys.proposals, draft.id):
            pipe.unwatch()
            return ProposeOutcome(optional_text(recorded) or draft.id, duplicate_delivery=True)
        version = decode_int(raw_version, keys.version)
        restated = restated_skills(pipe, keys, draft)
        target = self._merge_target(pipe, optional_text(same_id), bool(restated))
        if target is not None:
            merged = target.merged(draft.occurrence())
            if (
                auto_approve_after
                and merged.status is ProposalStatus.PENDING
                and merged.count >= auto_approve_after
            ):
                return self._auto_approve(pipe, merged, version, idem_key, same_key)
            pipe.multi()
            pipe.hset(keys.proposals, merged.id, merged.model_dump_json())
            pipe.set(same_key, merged.id)  # written, so a concurrent merge into it reads again
            pipe.set(idem_key, merged.id, ex=self.idempotency_ttl)
            pipe.execute()
            return ProposeOutcome(merged.id, False, merged=True, count=merged.count)
        reads = SkillReads(keys.skills)
        self._read_into(pipe, reads, draft.touched(), ())
        proposal = draft.model_copy(
            update={"base_version": version, "base_images": {i: reads.skills[i] for i in draft.touched()}}
        )
        if restated and reject_duplicates:
            note = f"restates active {noun_for(len(restated), 'skill')} {', '.join(restated)}"
            decision = Decision(actor=AUTO_REJECT_ACTOR, time=utc_now(), note=note, no_op=True)
            proposal = proposal.model_copy(update={"status": ProposalStatus.REJECTED, "decision": decision})
        pipe.multi()
        self._store_proposal(pipe, proposal, idem_key)
        pipe.set(same_key, proposal.id)
        if proposal.decision is not None:
            pipe.incr(keys.proposal_decisions)
        pipe.execute()
        rejected = restated if proposal.decision is not None else []
        return ProposeOutcome(proposal.id, duplicate_delivery=False, auto_rejected=rejected)

    def _merge_target(self, pipe: Pipeline, same_id: str | None, restates: bool) -> Proposal | None:
        """The proposal a draft of the same operations joins: the open one, or one auto-rejected as a
        duplicate while the draft still restates active skills; None when there is none."""
        if same_id is None:
            return None
        raw = pipe.hget(self.keys.proposals, same_id)
        if raw is None:
            return None
        found = decode_proposal(raw, self.keys.proposals, same_id)
        if found.status is ProposalStatus.PENDING:
            return found
        decided = found.decision
        if restates and decided is not None and decided.actor == AUTO_REJECT_ACTOR:
            return found
        return None

    def _store_proposal(self, pipe: Pipeline, proposal: Proposal, idem_key: str) -> None:
        """Inside MULTI: the proposal, its place in the queue (when pending), its idempotency key."""
        keys = self.keys
        pipe.hset(keys.proposals, proposal.id, proposal.model_dump_json())
        if proposal.status is ProposalStatus.PENDING:
            pipe.zadd(keys.proposal_queue, {proposal.id: _score(proposal.created_at)})
        pipe.set(idem_key, proposal.id, ex=self.idempotency_ttl)

    def _auto_approve(
        self, pipe: Pipeline, proposal: Proposal, version: int, idem_key: str, same_key: str
    ) -> ProposeOutcome:
        """Apply the operations ``proposal.count`` writes agreed on, once, and approve it.

        Applied to the skills as they are now, with no conflict check: the agreement of N
        writes stands in for a reviewer, and they were made on different versions anyway.
        """
        agreeing = [o.key for o in proposal.occurrences]
        note = f"{proposal.count} writes proposed it"
        prepared = self._prepare_changes(pipe, proposal, version, despite_conflicts=False)
        decided = self._queue_decision(
            pipe, proposal, prepared, version, AUTO_APPROVE_ACTOR, note, [], agreeing, same_key
        )
        pipe.set(idem_key, proposal.id, ex=self.idempotency_ttl)
        pipe.execute()
        assert decided.decision is not None
        return ProposeOutcome(
            proposal.id,
            False,
            auto_approved_version=decided.decision.version,
            agreeing=agreeing,
            merged=True,
            count=proposal.count,
        )

    # -- deciding ----------------------------------------------------------------------
    def decide(
        self,
        pipe: Pipeline,
        proposal_id: str,
        *,
        approve: bool,
        actor: str,
        note: str,
        despite_conflicts: bool,
    ) -> Proposal:
        """One attempt at approving (applying) or rejecting a pending proposal; returns it decided.

        An approval that changes no skill is recorded on the proposal (``decision.no_op``)
        and makes no version.
        """
        keys = self.keys
        watch_keys(pipe, keys.version, keys.proposal_decisions)
        version = decode_int(pipe.get(keys.version), keys.version)
        proposal = self._pending(pipe, proposal_id)
        same_key = keys.proposal_signature(signature_digest(proposal))
        # Watched before the second read: a merge into it in between makes this attempt retry.
        watch_keys(pipe, same_key)
        proposal = self._pending(pipe, proposal_id)
        conflicts: list[str] = []
        prepared: PreparedChanges | None = None
        if approve:
            conflicts = self.conflicts(pipe, proposal)
            if conflicts and not despite_conflicts:
                raise ProposalConflictError(self.name, proposal_id, conflicts)
            prepared = self._prepare_changes(pipe, proposal, version, despite_conflicts=bool(conflicts))
        decided = self._queue_decision(
            pipe, proposal, prepared, version, actor, note, conflicts, [], same_key
        )
        pipe.execute()
        return decided

    def _pending(self, pipe: Pipeline, proposal_id: str) -> Proposal:
        """The pending proposal ``proposal_id``; UnknownProposalError or ProposalDecidedError."""
        raw = pipe.hget(self.keys.proposals, proposal_id)
        if raw is None:
            raise UnknownProposalError(self.name, proposal_id)
        proposal = decode_proposal(raw, self.keys.proposals, proposal_id)
        if proposal.status is not ProposalStatus.PENDING:
            decided = proposal.decision
            raise ProposalDecidedError(
                self.name,
                proposal_id,
                proposal.status.value,
                decided.actor if decided else "?",
                decided.time if decided else "?",
            )
        return proposal

    def _queue_decision(
        self,
        pipe: Pipeline,
        proposal: Proposal,
        prepared: PreparedChanges | None,
        version: int,
        actor: str,
        note: str,
        conflicts: list[str],
        agreeing: list[str],
        same_key: str,
    ) -> Proposal:
        """Start MULTI and queue a decision: approve (``prepared``) or reject (None); returns it decided.

        A rejection, or an approval that changes something, is a version with a REVIEW entry;
        an approval changing nothing is recorded on the proposal alone.
        """
        keys = self.keys
        makes_version = prepared is None or prepared.changes_anything
        decision = Decision(
            actor=actor,
            time=utc_now(),
            note=note,
            version=version + 1 if makes_version else None,
            despite_conflicts=conflicts,
            agreeing=agreeing,
            no_op=not makes_version,
        )
        status = ProposalStatus.REJECTED if prepared is None else ProposalStatus.APPROVED
        decided = proposal.model_copy(update={"status": status, "decision": decision})
        same_id = optional_text(pipe.get(same_key))
        if makes_version:
            self._begin_write(pipe, version)
        else:
            pipe.multi()
        if prepared is not None and makes_version:
            prepared.queue()
        pipe.hset(keys.proposals, proposal.id, decided.model_dump_json())
        pipe.zrem(keys.proposal_queue, proposal.id)
        pipe.incr(keys.proposal_decisions)
        if same_id == proposal.id:  # decided: the next write proposing the same opens a new one
            pipe.delete(same_key)
        if makes_version:
            changes = prepared.changes if prepared is not None else {}
            self._end_decision(pipe, proposal, decision, status.value, version, changes)
        return decided

    def conflicts(self, pipe: Pipeline, proposal: Proposal) -> list[str]:
        """The skills the proposal touches that changed in substance since it was proposed."""
        reads = SkillReads(self.keys.skills)
        self._read_into(pipe, reads, proposal.touched(), ())
        return [
            skill_id
            for skill_id, base in proposal.base_images.items()
            if substance_changed(base, reads.skills[skill_id])
        ]

    def _prepare_changes(
        self, pipe: Pipeline, proposal: Proposal, version: int, *, despite_conflicts: bool
    ) -> PreparedChanges:
        """Plan the proposal's operations as the store applies them (nothing written yet)."""
        if proposal.kind is ProposalKind.UPDATE:
            prepared = self.prepare_apply(pipe, proposal.update_batch(), version)

            def queue_apply() -> None:
                self.queue_apply(pipe, prepared)
                pipe.hincrby(self.keys.stats, STAT_APPLIES, 1)
                if prepared.report.skipped_ops:
                    pipe.hincrby(self.keys.stats, STAT_SKIPPED_OPS, prepared.report.skipped_ops)

            plan = prepared.plan
            return PreparedChanges(plan.changes, queue_apply, bool(plan.changes or plan.provenance))
        consolidation = proposal.consolidation_batch()
        if despite_conflicts:  # approved knowing the skills were rewritten: judge the text they have now
            consolidation = consolidation.model_copy(update={"planned_contents": {}})
        prepared_consolidation = self.prepare_consolidation(pipe, consolidation, version)

        def queue_consolidation() -> None:
            self.queue_consolidation(pipe, prepared_consolidation)

        # A consolidation also records its similarity decisions: always a version.
        return PreparedChanges(prepared_consolidation.changes, queue_consolidation, True)

    def _end_decision(
        self,
        pipe: Pipeline,
        proposal: Proposal,
        decision: Decision,
        status: str,
        version: int,
        changes: dict[str, tuple[SkillImage, SkillImage]],
    ) -> None:
        """Inside MULTI: the version bump and the REVIEW change-log entry of a decision."""
        review: dict[str, Any] = {
            "proposal": proposal.id,
            "kind": proposal.kind.value,
            "decision": status,
            "actor": decision.actor,
            "note": decision.note,
            "time": decision.time,
        }
        if decision.despite_conflicts:
            review["despite_conflicts"] = decision.despite_conflicts
        # A rejection applied nothing: its entry lists no operation (the proposal keeps them).
        operations = proposal.operations if status == ProposalStatus.APPROVED.value else []
        if proposal.kind is ProposalKind.CONSOLIDATE:
            batch_json = json.dumps(
                {"reasoning": proposal.reasoning, "operations": operations, CONSOLIDATION_MARK: True},
                ensure_ascii=False,
            )
        else:
            batch_json = UpdateBatch.model_validate(
                {"reasoning": proposal.reasoning, "operations": operations}
            ).to_json()
        self._end_write(
            pipe,
            version + 1,
            ChangeKind.REVIEW,
            base_version=proposal.base_version,
            batch_json=batch_json,
            changes=changes,
            source_json=dump_json({**proposal.source, "review": review}, "source"),
        )

    # -- the policy --------------------------------------------------------------------
    def set_policy(self, pipe: Pipeline, policy_json: str, actor: str, note: str) -> int:
        """One attempt at storing the review policy, as a new version with a REVIEW change-log entry."""
        keys = self.keys
        watch_keys(pipe, keys.version)
        version = decode_int(pipe.get(keys.version), keys.version)
        self._begin_write(pipe, version)
        pipe.set(keys.review_policy, policy_json)
        source = {"review_policy": json.loads(policy_json), "actor": actor, "note": note, "time": utc_now()}
        self._end_write(
            pipe,
            version + 1,
            ChangeKind.REVIEW,
            base_version=version,
            source_json=dump_json(source, "source"),
        )
        pipe.execute()
        return version + 1


def _score(created_at: str) -> float:
    """A proposal's place in the pending queue: when it was proposed, as seconds since the epoch."""
    return datetime.fromisoformat(created_at).timestamp()
