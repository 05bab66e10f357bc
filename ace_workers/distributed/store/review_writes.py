"""The write transactions of review: one attempt each at proposing, deciding, and setting the policy.

Same shape as every skillbook write (transactions.py): WATCH the version, read,
MULTI, write, EXEC; a WatchError escapes to the store's retry loop. A decision
and a policy change bump the version and append a REVIEW entry to the change
log; storing a proposal changes no skill, so it makes no version (readers'
snapshots stay valid) and is guarded by its own idempotency key instead.

Every change of a proposal's status happens in a transaction that bumps the
version, so WATCHing the version guards the proposal's state too: of two
reviewers deciding one proposal at once, the second's EXEC fails, it reads
again and finds the proposal decided.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from redis.client import Pipeline

from ...core.skill import utc_now
from ...core.updates import UpdateBatch
from .changelog import CONSOLIDATION_MARK, ChangeKind, SkillImage
from .errors import ProposalConflictError, ProposalDecidedError, UnknownProposalError
from .keys import STAT_APPLIES, STAT_SKIPPED_OPS
from .planning import SkillReads
from .proposals import Decision, Proposal, ProposalKind, ProposalStatus, decode_proposal, substance_changed
from .replies import decode_int, decode_text
from .transactions import SkillbookWrites, dump_json, read_watched, watch_keys

__all__ = ["AUTO_APPROVE_ACTOR", "ProposeOutcome", "ReviewWrites"]

AUTO_APPROVE_ACTOR = "auto-approve"
# Called inside MULTI: queues an approval's writes, returns the skills it changes (before, after).
QueueChanges = Callable[[], dict[str, tuple[SkillImage, SkillImage]]]


@dataclass(frozen=True)
class ProposeOutcome:
    """What storing a proposal did: its id, whether it was stored before, and an auto-approval's version."""

    proposal_id: str
    duplicate_delivery: bool
    auto_approved_version: int | None = None
    agreeing: list[str] = field(default_factory=list)


class ReviewWrites(SkillbookWrites):
    """The attempts of every review write to one skillbook, run inside the store's retry loop."""

    # -- proposing ---------------------------------------------------------------------
    def propose(
        self, pipe: Pipeline, draft: Proposal, idempotency_key: str, auto_approve_after: int | None
    ) -> ProposeOutcome:
        """One attempt at storing ``draft`` (its base images read here), or finding it stored already.

        With ``auto_approve_after`` N, when N-1 pending proposals carry the same
        operations, the operations apply now, once, and all N are approved.
        """
        keys = self.keys
        idem_key = keys.idempotency(f"proposal:{idempotency_key}")
        # Auto-approval counts the pending proposals: WATCH their queue, so two agreeing
        # proposals stored at once cannot both miss each other. Only the strings are read
        # back (a cluster reads each watched key with GET, which a sorted set refuses).
        watch_keys(pipe, keys.version, idem_key, *([keys.proposal_queue] if auto_approve_after else []))
        raw_version, recorded = read_watched(pipe, [keys.version, idem_key])
        if recorded is not None or pipe.hexists(keys.proposals, draft.id):
            pipe.unwatch()
            return ProposeOutcome(draft.id, duplicate_delivery=True)
        version = decode_int(raw_version, keys.version)
        reads = SkillReads(keys.skills)
        self._read_into(pipe, reads, draft.touched(), ())
        proposal = draft.model_copy(
            update={"base_version": version, "base_images": {i: reads.skills[i] for i in draft.touched()}}
        )
        agreeing = self._agreeing(pipe, proposal) if auto_approve_after else []
        if auto_approve_after and len(agreeing) + 1 >= auto_approve_after:
            return self._auto_approve(pipe, proposal, agreeing, version, idem_key)
        pipe.multi()
        self._store_proposal(pipe, proposal, idem_key)
        pipe.execute()
        return ProposeOutcome(proposal.id, duplicate_delivery=False)

    def _store_proposal(self, pipe: Pipeline, proposal: Proposal, idem_key: str) -> None:
        """Inside MULTI: the proposal, its place in the queue (when pending), its idempotency key."""
        keys = self.keys
        pipe.hset(keys.proposals, proposal.id, proposal.model_dump_json())
        if proposal.status is ProposalStatus.PENDING:
            pipe.zadd(keys.proposal_queue, {proposal.id: _score(proposal.created_at)})
        pipe.set(idem_key, proposal.id, ex=self.idempotency_ttl)

    def _agreeing(self, pipe: Pipeline, proposal: Proposal) -> list[Proposal]:
        """The pending proposals carrying the same operations as ``proposal`` (O(pending proposals))."""
        ids = [decode_text(i) for i in pipe.zrange(self.keys.proposal_queue, 0, -1)]  # type: ignore[arg-type]
        if not ids:
            return []
        found = []
        for pending_id, raw in zip(ids, pipe.hmget(self.keys.proposals, ids), strict=True):
            if raw is None:
                continue
            other = decode_proposal(raw, self.keys.proposals, pending_id)
            if other.kind is proposal.kind and other.signature == proposal.signature:
                found.append(other)
        return found

    def _auto_approve(
        self, pipe: Pipeline, proposal: Proposal, agreeing: list[Proposal], version: int, idem_key: str
    ) -> ProposeOutcome:
        """Apply the operations ``proposal`` and ``agreeing`` share, once; approve all of them.

        Applied to the skills as they are now, with no conflict check: the agreement of N
        proposals stands in for a reviewer, and they were made on different versions anyway.
        """
        ids = [p.id for p in agreeing] + [proposal.id]
        note = f"{len(ids)} agreeing proposals: {', '.join(ids)}"
        decision = Decision(
            actor=AUTO_APPROVE_ACTOR, time=utc_now(), note=note, version=version + 1, agreeing=ids
        )
        queue_changes = self._prepare_changes(pipe, proposal, version, despite_conflicts=False)
        self._begin_write(pipe, version)
        changes = queue_changes()
        for decided in [*agreeing, proposal]:
            approved = decided.model_copy(update={"status": ProposalStatus.APPROVED, "decision": decision})
            pipe.hset(self.keys.proposals, decided.id, approved.model_dump_json())
        pipe.zrem(self.keys.proposal_queue, *[p.id for p in agreeing])
        pipe.set(idem_key, proposal.id, ex=self.idempotency_ttl)
        self._end_decision(pipe, proposal, decision, "approved", version, changes)
        pipe.execute()
        return ProposeOutcome(proposal.id, False, auto_approved_version=version + 1, agreeing=ids)

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
        """One attempt at approving (applying) or rejecting a pending proposal; returns it decided."""
        keys = self.keys
        watch_keys(pipe, keys.version)
        version = decode_int(pipe.get(keys.version), keys.version)
        raw = pipe.hget(keys.proposals, proposal_id)
        if raw is None:
            raise UnknownProposalError(self.name, proposal_id)
        proposal = decode_proposal(raw, keys.proposals, proposal_id)
        if proposal.status is not ProposalStatus.PENDING:
            decided = proposal.decision
            raise ProposalDecidedError(
                self.name,
                proposal_id,
                proposal.status.value,
                decided.actor if decided else "?",
                decided.time if decided else "?",
            )
        conflicts: list[str] = []
        queue_changes: QueueChanges | None = None
        if approve:
            conflicts = self.conflicts(pipe, proposal)
            if conflicts and not despite_conflicts:
                raise ProposalConflictError(self.name, proposal_id, conflicts)
            queue_changes = self._prepare_changes(pipe, proposal, version, despite_conflicts=bool(conflicts))
        decision = Decision(
            actor=actor, time=utc_now(), note=note, version=version + 1, despite_conflicts=conflicts
        )
        status = ProposalStatus.APPROVED if approve else ProposalStatus.REJECTED
        decided_proposal = proposal.model_copy(update={"status": status, "decision": decision})
        self._begin_write(pipe, version)
        changes = queue_changes() if queue_changes is not None else {}
        pipe.hset(keys.proposals, proposal_id, decided_proposal.model_dump_json())
        pipe.zrem(keys.proposal_queue, proposal_id)
        self._end_decision(pipe, proposal, decision, status.value, version, changes)
        pipe.execute()
        return decided_proposal

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
    ) -> QueueChanges:
        """Plan the proposal's operations as the store applies them; returns what queues them in MULTI.

        The returned function, called inside MULTI, queues the writes and returns the skill changes.
        """
        if proposal.kind is ProposalKind.UPDATE:
            batch = proposal.update_batch()
            prepared = self.prepare_apply(pipe, batch, version)

            def queue_apply() -> dict[str, tuple[SkillImage, SkillImage]]:
                self.queue_apply(pipe, prepared)
                pipe.hincrby(self.keys.stats, STAT_APPLIES, 1)
                if prepared.report.skipped_ops:
                    pipe.hincrby(self.keys.stats, STAT_SKIPPED_OPS, prepared.report.skipped_ops)
                return prepared.plan.changes

            return queue_apply
        consolidation = proposal.consolidation_batch()
        if despite_conflicts:  # approved knowing the skills were rewritten: judge the text they have now
            consolidation = consolidation.model_copy(update={"planned_contents": {}})
        prepared_consolidation = self.prepare_consolidation(pipe, consolidation, version)

        def queue_consolidation() -> dict[str, tuple[SkillImage, SkillImage]]:
            self.queue_consolidation(pipe, prepared_consolidation)
            return prepared_consolidation.changes

        return queue_consolidation

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
