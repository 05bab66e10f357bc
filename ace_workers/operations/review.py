"""Review: the proposals learning made under a review policy, deciding them, and the policy itself.

Reading needs role read; approving and rejecting, review; setting the policy, admin (it
decides what learning may change unseen). The decision is recorded as the principal's.
Several proposals are decided one by one, each its own decision (its own version, if it
changes anything): named by id, or every pending one a :class:`ProposalFilter` picks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..distributed.store.errors import (
    ProposalConflictError,
    ProposalDecidedError,
    UnknownProposalError,
)
from ..distributed.store.proposals import Proposal, ProposalKind, ProposalStatus
from ..distributed.store.review import SkillbookReview
from ..distributed.store.review_policy import CONSOLIDATE, POLICY_SUBJECTS, ReviewPolicy
from ..errors import InvalidConsolidationError
from .access import ADMIN, READ, REVIEW, authorized_store, existing_store
from .fleet import FleetClient
from .principal import Principal

__all__ = [
    "DECIDE_ROLE",
    "DecisionOutcome",
    "ProposalFilter",
    "ProposalList",
    "ProposalView",
    "PolicyView",
    "list_proposals",
    "show_proposal",
    "approve_proposal",
    "decide_proposals",
    "reject_proposal",
    "review_policy",
    "set_review_policy",
]

DECIDE_ROLE = REVIEW
_EVERY = 10**9  # a limit no skillbook's proposals reach
# What refuses one proposal of several without stopping the rest (nothing of it is written).
_REFUSALS = (UnknownProposalError, ProposalDecidedError, ProposalConflictError, InvalidConsolidationError)


@dataclass(frozen=True)
class ProposalFilter:
    """Which proposals a list or a decision of --all picks: by section, kind of operation, duplicates."""

    section: str | None = None
    operation: str | None = None  # ADD, UPDATE, TAG, REMOVE or CONSOLIDATE
    duplicates: bool = False  # only those restating active skills (approving them changes nothing)

    def __post_init__(self) -> None:
        if self.operation is not None and self.operation not in POLICY_SUBJECTS:
            raise ValueError(f"operation {self.operation!r}: use one of {', '.join(POLICY_SUBJECTS)}")

    @property
    def narrows(self) -> bool:
        """True when it leaves any proposal out."""
        return self.section is not None or self.operation is not None or self.duplicates


@dataclass(frozen=True)
class DecisionOutcome:
    """One proposal of a decision on several: decided, or why not (nothing of it was written)."""

    proposal_id: str
    decided: Proposal | None = None
    refused: Exception | None = None
    restated: list[str] = field(default_factory=list)  # the active skills it restated when decided


@dataclass(frozen=True)
class ProposalList:
    """A page of a skillbook's proposals (oldest first), each pending one's conflicts, and the policy."""

    name: str
    pending: int  # how many wait for a decision in all
    total: int  # how many match the filters
    proposals: list[Proposal]
    conflicts: dict[str, list[str]]  # proposal id -> the skills it touches that changed since
    policy: ReviewPolicy
    duplicates: dict[str, list[str]] = field(default_factory=dict)  # id -> the active skills it restates


@dataclass(frozen=True)
class ProposalView:
    """One proposal, its conflicts now, and what each conflicting skill says now."""

    name: str
    version: int
    proposal: Proposal
    conflicts: list[str]
    current_images: dict[str, dict[str, Any] | None]
    policy: ReviewPolicy
    duplicate_of: list[str] = field(default_factory=list)  # the active skills it restates (pending)


@dataclass(frozen=True)
class PolicyView:
    """A skillbook's review policy, and the version that set it (None when only read)."""

    name: str
    policy: ReviewPolicy
    version: int | None = None


def conflicts_of(review: SkillbookReview, proposal: Proposal) -> list[str]:
    """The skills a pending proposal touches that changed since; none for a decided one."""
    return review.conflicts(proposal) if proposal.status is ProposalStatus.PENDING else []


def list_proposals(
    fleet: FleetClient,
    principal: Principal,
    name: str,
    *,
    status: ProposalStatus | None = ProposalStatus.PENDING,
    section: str | None = None,
    limit: int = 100,
    offset: int = 0,
    picked: ProposalFilter | None = None,
) -> ProposalList:
    """The proposals of ``status`` (None: all) touching ``section`` (if given) and as ``picked``
    says, ``limit`` from ``offset``, each with its conflicts and the active skills it restates."""
    review = existing_store(fleet, principal, READ, name).review
    chosen = picked or ProposalFilter(section=section)
    pending = review.pending_count()
    if status is ProposalStatus.PENDING and not chosen.narrows:
        # The pending queue is read a page at a time; the rest are in one hash, read whole.
        total, shown = pending, review.proposals(status, limit=limit, offset=offset)
    else:
        every = _picked(review, status, chosen)
        total, shown = len(every), every[offset : offset + limit]
    conflicts = {p.id: conflicts_of(review, p) for p in shown}
    duplicates = {p.id: review.restated(p) for p in shown}
    return ProposalList(name, pending, total, shown, conflicts, review.policy(), duplicates)


def _picked(review: SkillbookReview, status: ProposalStatus | None, picked: ProposalFilter) -> list[Proposal]:
    """Every proposal of ``status`` that ``picked`` picks, oldest first."""
    every = review.proposals(status, limit=_EVERY, section=picked.section)
    if picked.operation is not None:
        every = [p for p in every if _has_operation(p, picked.operation)]
    if picked.duplicates:
        every = [p for p in every if review.restated(p)]
    return every


def _has_operation(proposal: Proposal, operation: str) -> bool:
    if operation == CONSOLIDATE:
        return proposal.kind is ProposalKind.CONSOLIDATE
    return proposal.kind is ProposalKind.UPDATE and any(
        op.get("type") == operation for op in proposal.operations
    )


def show_proposal(fleet: FleetClient, principal: Principal, name: str, proposal_id: str) -> ProposalView:
    """One proposal in full; UnknownProposalError if the skillbook has none of that id."""
    store = existing_store(fleet, principal, READ, name)
    review = store.review
    proposal = review.get(proposal_id)
    conflicts = conflicts_of(review, proposal)
    images = {skill_id: store.read_skill(skill_id)[1] for skill_id in conflicts}
    return ProposalView(
        name, store.version(), proposal, conflicts, images, review.policy(), review.restated(proposal)
    )


def approve_proposal(
    fleet: FleetClient,
    principal: Principal,
    name: str,
    proposal_id: str,
    *,
    note: str = "",
    despite_conflicts: bool = False,
) -> Proposal:
    """Apply a pending proposal as one new version, decided by the principal.

    Raises UnknownProposalError, ProposalDecidedError, ProposalConflictError (unless
    ``despite_conflicts``) or InvalidConsolidationError; nothing is written when it raises.
    """
    review = existing_store(fleet, principal, DECIDE_ROLE, name).review
    return review.approve(proposal_id, actor=principal.name, note=note, despite_conflicts=despite_conflicts)


def reject_proposal(
    fleet: FleetClient, principal: Principal, name: str, proposal_id: str, *, note: str = ""
) -> Proposal:
    """Reject a pending proposal (nothing of it applies), decided by the principal."""
    review = existing_store(fleet, principal, DECIDE_ROLE, name).review
    return review.reject(proposal_id, actor=principal.name, note=note)


def decide_proposals(
    fleet: FleetClient,
    principal: Principal,
    name: str,
    proposal_ids: Sequence[str] | None,
    *,
    approve: bool,
    note: str = "",
    despite_conflicts: bool = False,
    picked: ProposalFilter | None = None,
) -> list[DecisionOutcome]:
    """Approve or reject each of ``proposal_ids`` (None: every pending proposal ``picked`` picks).

    Each is its own decision, in order; one refused (unknown, decided already, conflicting)
    is reported in its outcome and the rest go on. Authorization, a bad note or an
    unreachable Redis stop the whole at once.
    """
    review = existing_store(fleet, principal, DECIDE_ROLE, name).review
    if proposal_ids is None:
        proposal_ids = [p.id for p in _picked(review, ProposalStatus.PENDING, picked or ProposalFilter())]
    outcomes = []
    for proposal_id in dict.fromkeys(proposal_ids):  # an id given twice is decided once
        try:
            restated = review.restated(review.get(proposal_id)) if approve else []
            if approve:
                decided = review.approve(
                    proposal_id, actor=principal.name, note=note, despite_conflicts=despite_conflicts
                )
            else:
                decided = review.reject(proposal_id, actor=principal.name, note=note)
        except _REFUSALS as exc:
            outcomes.append(DecisionOutcome(proposal_id, refused=exc))
            continue
        outcomes.append(DecisionOutcome(proposal_id, decided, restated=restated))
    return outcomes


def review_policy(fleet: FleetClient, principal: Principal, name: str) -> PolicyView:
    """The review policy of ``name`` (auto for a skillbook not written yet)."""
    return PolicyView(name, authorized_store(fleet, principal, READ, name).review.policy())


def set_review_policy(
    fleet: FleetClient, principal: Principal, name: str, policy: ReviewPolicy, *, note: str = ""
) -> PolicyView:
    """Set the review policy as one version; also before the first lesson (learning then starts reviewed)."""
    review = authorized_store(fleet, principal, ADMIN, name).review
    version = review.set_policy(policy, actor=principal.name, note=note)
    return PolicyView(name, review.policy(), version)
