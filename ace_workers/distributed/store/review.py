"""Review before apply: a skillbook's policy, its proposals, and the decisions on them.

``store.review`` (a :class:`SkillbookReview`) is the Python API behind
``ace-workers skillbook review`` and the MCP review tools. Learning reaches it
through the StoreBackedSkillbook: under a policy that reviews an operation, the
write stores a proposal instead of applying it. A reviewer approves a proposal
(it applies, with the store's apply semantics, as one new version) or rejects
it; each is decided exactly once, and every decision that changes the skillbook
(an approval that changes skills, a rejection) is a REVIEW entry of the change log
with its actor, note and time. A write proposing what an open proposal proposes
is merged into it (counted, with where it came from); a proposal that only
restates active skills is a duplicate (``restated``), rejected at once when the
policy says so, and approving it makes no version.
"""

from __future__ import annotations

import logging
from typing import Any

import redis

from ...core.consolidation import ConsolidationBatch
from ...core.skill import utc_now
from ...core.updates import UpdateBatch
from .actors import check_actor
from .changelog import ChangeKind, ChangeRecord
from .errors import UnknownProposalError
from .keys import SkillbookKeys
from .planning import SkillReads
from .proposals import (
    Proposal,
    ProposalKind,
    ProposalStatus,
    consolidation_signature,
    decode_proposal,
    proposal_id,
    substance_changed,
    update_signature,
)
from .replies import decode_text, reading
from .review_policy import ReviewPolicy, decode_policy
from .review_writes import (
    AUTO_APPROVE_ACTOR,
    AUTO_REJECT_ACTOR,
    ProposeOutcome,
    ReviewWrites,
    restated_skills,
)
from .transactions import CompareAndSet, SkillbookWrites

__all__ = [
    "AUTO_APPROVE_ACTOR",
    "AUTO_REJECT_ACTOR",
    "ProposeOutcome",
    "SkillbookReview",
    "is_review_of_skills",
]

logger = logging.getLogger(__name__)

_MAX_NOTE_CHARS = 2000  # a note lands in the change log and in terminal lines


def is_review_of_skills(record: ChangeRecord) -> bool:
    """True for a REVIEW entry a cached snapshot can be brought forward through (no consolidation).

    An approved update proposal changes skills as an apply does; a rejection or a policy
    change touches none. An approved consolidation may record similarity decisions, which
    only a whole read picks up (as for a CONSOLIDATE entry).
    """
    return record.kind is ChangeKind.REVIEW and not record.consolidation


class SkillbookReview:
    """The review policy and proposals of one skillbook (``RedisSkillbookStore.review``)."""

    def __init__(
        self, client: redis.Redis, keys: SkillbookKeys, writes: SkillbookWrites, cas: CompareAndSet
    ) -> None:
        self._redis = client
        self.keys = keys
        self._cas = cas
        self._writes = ReviewWrites(
            client,
            keys,
            changelog_maxlen=writes.changelog_maxlen,
            idempotency_ttl=writes.idempotency_ttl,
            max_skills=writes.max_skills,
        )

    @property
    def name(self) -> str:
        """The skillbook's name."""
        return self.keys.name

    # -- the policy --------------------------------------------------------------------
    def policy(self) -> ReviewPolicy:
        """The stored policy; the auto policy when none is stored. CorruptDataError for bad JSON."""
        key = self.keys.review_policy
        with reading(key):
            return decode_policy(self._redis.get(key), key)

    def set_policy(self, policy: ReviewPolicy, *, actor: str, note: str = "") -> int:
        """Store ``policy`` as a new version (logged with ``actor`` and ``note``); return that version."""
        check_actor(actor)
        _check_note(note)
        version = self._cas(
            "set_review_policy", lambda pipe: self._writes.set_policy(pipe, policy.to_json(), actor, note)
        )
        logger.info("skillbook %r: review policy %s (by %s)", self.name, policy.describe(), actor)
        return version

    # -- proposing ---------------------------------------------------------------------
    def propose_update(
        self,
        batch: UpdateBatch,
        *,
        idempotency_key: str,
        source: dict[str, Any] | None = None,
        auto_approve_after: int | None = None,
        reject_duplicates: bool = False,
    ) -> ProposeOutcome:
        """Store ``batch`` as a pending proposal, once per ``idempotency_key`` (a redelivery finds it).

        Merged into the open proposal of the same operations if there is one; rejected at once
        when ``reject_duplicates`` and it only restates active skills.
        """
        batch.validate_operations()
        touched = [op.skill_id for op in batch.operations if op.skill_id and op.type != "ADD"]
        draft = self._draft(
            idempotency_key,
            ProposalKind.UPDATE,
            [op.model_dump(exclude_none=True) for op in batch.operations],
            batch.reasoning,
            touched,
            source,
            update_signature(batch),
        )
        draft.insight_sources.extend(op.insight_source for op in batch.operations if op.insight_source)
        return self._propose(draft, idempotency_key, auto_approve_after, reject_duplicates)

    def propose_consolidation(
        self,
        batch: ConsolidationBatch,
        *,
        idempotency_key: str,
        source: dict[str, Any] | None = None,
        auto_approve_after: int | None = None,
    ) -> ProposeOutcome:
        """Store a dedup batch as a pending proposal, once per ``idempotency_key`` (merged likewise)."""
        touched = [skill_id for op in batch.operations for skill_id in op.named_ids()]
        draft = self._draft(
            idempotency_key,
            ProposalKind.CONSOLIDATE,
            batch.to_dict()["operations"],
            batch.reasoning,
            touched,
            source,
            consolidation_signature(batch),
        )
        # The texts the plan judged: an approval without despite_conflicts checks them.
        draft.planned_contents.update(batch.planned_contents)
        return self._propose(draft, idempotency_key, auto_approve_after, False)

    def _draft(
        self,
        idempotency_key: str,
        kind: ProposalKind,
        operations: list[dict[str, Any]],
        reasoning: str,
        touched: list[str],
        source: dict[str, Any] | None,
        signature: str,
    ) -> Proposal:
        if not isinstance(idempotency_key, str) or not idempotency_key:
            raise ValueError(f"idempotency_key must be a non-empty string, got {idempotency_key!r}")
        return Proposal(
            id=proposal_id(idempotency_key),
            skillbook=self.name,
            kind=kind,
            operations=operations,
            reasoning=reasoning,
            source=dict(source or {}),
            base_version=0,  # read in the transaction, with the base images
            base_images=dict.fromkeys(touched),
            created_at=utc_now(),
            idempotency_key=idempotency_key,
            signature=signature,
        )

    def _propose(
        self, draft: Proposal, idempotency_key: str, auto_approve_after: int | None, reject_duplicates: bool
    ) -> ProposeOutcome:
        outcome = self._cas(
            "propose",
            lambda pipe: self._writes.propose(
                pipe, draft, idempotency_key, auto_approve_after, reject_duplicates
            ),
        )
        if outcome.duplicate_delivery:
            logger.info(
                "skillbook %r: proposal %s was stored already; not again", self.name, outcome.proposal_id
            )
        elif outcome.auto_approved_version is not None:
            logger.info(
                "skillbook %r version %d: auto-approved %s, proposed by %d writes",
                self.name,
                outcome.auto_approved_version,
                outcome.proposal_id,
                outcome.count,
            )
        elif outcome.auto_rejected:
            logger.info(
                "skillbook %r: proposal %s rejected at once: it restates %s",
                self.name,
                outcome.proposal_id,
                ", ".join(outcome.auto_rejected),
            )
        elif outcome.merged:
            logger.info(
                "skillbook %r: merged into proposal %s (proposed %d times)",
                self.name,
                outcome.proposal_id,
                outcome.count,
            )
        else:
            logger.info(
                "skillbook %r: proposal %s waits for review: %s", self.name, draft.id, draft.summary()
            )
        return outcome

    # -- reading -----------------------------------------------------------------------
    def get(self, proposal_id: str) -> Proposal:
        """One proposal, whatever its status; UnknownProposalError if there is none of that id."""
        with reading(self.keys.proposals):
            raw = self._redis.hget(self.keys.proposals, proposal_id)
        if raw is None:
            raise UnknownProposalError(self.name, proposal_id)
        return decode_proposal(raw, self.keys.proposals, proposal_id)

    def pending_count(self) -> int:
        """How many proposals wait for a decision."""
        with reading(self.keys.proposal_queue):
            return int(self._redis.zcard(self.keys.proposal_queue))

    def proposals(
        self,
        status: ProposalStatus | None = ProposalStatus.PENDING,
        limit: int = 100,
        *,
        offset: int = 0,
        section: str | None = None,
    ) -> list[Proposal]:
        """Proposals oldest first: the pending ones (default), those of another status, or all (None).

        ``section`` keeps those with an operation in that section (applied before
        ``offset`` and ``limit``: ``section=S, limit=1`` is S's oldest); ``offset``
        skips that many. Pending proposals without a section are read a page at a time.
        """
        if limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit}")
        if offset < 0:
            raise ValueError(f"offset must be at least 0, got {offset}")
        if section is not None:
            every = self._read(status, 0, -1)
            return [p for p in every if p.touches_section(section)][offset : offset + limit]
        return self._read(status, offset, offset + limit - 1)

    def _read(self, status: ProposalStatus | None, first: int, last: int) -> list[Proposal]:
        """Proposals of ``status`` oldest first, positions ``first`` to ``last`` (-1: to the end)."""
        if status is ProposalStatus.PENDING:
            with reading(self.keys.proposal_queue):
                queued = self._redis.zrange(self.keys.proposal_queue, first, last)
            ids = [decode_text(i) for i in queued]  # type: ignore[arg-type]
            if not ids:
                return []
            with reading(self.keys.proposals):
                raws = self._redis.hmget(self.keys.proposals, ids)
            found = [
                decode_proposal(raw, self.keys.proposals, i) for i, raw in zip(ids, raws, strict=True) if raw
            ]
            return found
        with reading(self.keys.proposals):
            everything = self._redis.hgetall(self.keys.proposals)
        proposals = [
            decode_proposal(raw, self.keys.proposals, decode_text(i)) for i, raw in everything.items()
        ]
        chosen = sorted(
            (p for p in proposals if status is None or p.status is status), key=lambda p: (p.created_at, p.id)
        )
        return chosen[first:] if last < 0 else chosen[first : last + 1]

    def conflicts(self, proposal: Proposal) -> list[str]:
        """The skills ``proposal`` touches that changed in substance since it was proposed (now)."""
        ids = proposal.touched()
        if not ids:
            return []
        reads = SkillReads(self.keys.skills)
        with reading(self.keys.skills):
            for skill_id, raw in zip(ids, self._redis.hmget(self.keys.skills, ids), strict=True):
                reads.add_skill(skill_id, raw)
        return [i for i, base in proposal.base_images.items() if substance_changed(base, reads.skills[i])]

    def restated(self, proposal: Proposal) -> list[str]:
        """The active skills a pending all-ADD proposal restates (now); [] if it adds anything new."""
        if proposal.status is not ProposalStatus.PENDING:
            return []
        with reading(self.keys.content):
            return restated_skills(self._redis, self.keys, proposal)

    # -- deciding ----------------------------------------------------------------------
    def approve(
        self, proposal_id: str, *, actor: str, note: str = "", despite_conflicts: bool = False
    ) -> Proposal:
        """Apply a pending proposal as one new version and mark it approved, in one transaction.

        Raises UnknownProposalError, ProposalDecidedError (approved or rejected already,
        naming by whom), ProposalConflictError (a skill it touches changed since it was
        proposed, unless ``despite_conflicts``), or InvalidConsolidationError (a
        consolidation naming a skill that is gone). Nothing is written when it raises.
        """
        return self._decide(proposal_id, True, actor, note, despite_conflicts)

    def reject(self, proposal_id: str, *, actor: str, note: str = "") -> Proposal:
        """Mark a pending proposal rejected (skills unchanged), as a new version logging the decision."""
        return self._decide(proposal_id, False, actor, note, False)

    def _decide(self, proposal_id: str, approve: bool, actor: str, note: str, despite: bool) -> Proposal:
        check_actor(actor)
        _check_note(note)
        decided = self._cas(
            "approve" if approve else "reject",
            lambda pipe: self._writes.decide(
                pipe, proposal_id, approve=approve, actor=actor, note=note, despite_conflicts=despite
            ),
        )
        decision = decided.decision
        assert decision is not None
        if decision.no_op:
            logger.info(
                "skillbook %r: proposal %s %s by %s; it changed nothing (no new version)",
                self.name,
                proposal_id,
                decided.status.value,
                actor,
            )
        else:
            logger.info(
                "skillbook %r version %d: proposal %s %s by %s",
                self.name,
                decision.version,
                proposal_id,
                decided.status.value,
                actor,
            )
        return decided


def _check_note(note: str) -> None:
    if not isinstance(note, str) or len(note) > _MAX_NOTE_CHARS:
        raise ValueError(f"note must be a string of at most {_MAX_NOTE_CHARS} characters")
