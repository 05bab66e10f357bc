"""Review: the proposals learning made under a review policy, deciding them, and the policy itself.

Reading needs role read; approving and rejecting, review; setting the policy, admin (it
decides what learning may change unseen). The decision is recorded as the principal's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..distributed.store.proposals import Proposal, ProposalStatus
from ..distributed.store.review import SkillbookReview
from ..distributed.store.review_policy import ReviewPolicy
from .access import ADMIN, READ, REVIEW, authorized_store, existing_store
from .fleet import FleetClient
from .principal import Principal

__all__ = [
    "DECIDE_ROLE",
    "ProposalList",
    "ProposalView",
    "PolicyView",
    "list_proposals",
    "show_proposal",
    "approve_proposal",
    "reject_proposal",
    "review_policy",
    "set_review_policy",
]

DECIDE_ROLE = REVIEW
_EVERY = 10**9  # a limit no skillbook's proposals reach


@dataclass(frozen=True)
class ProposalList:
    """A page of a skillbook's proposals (oldest first), each pending one's conflicts, and the policy."""

    name: str
    pending: int  # how many wait for a decision in all
    total: int  # how many match the filters
    proposals: list[Proposal]
    conflicts: dict[str, list[str]]  # proposal id -> the skills it touches that changed since
    policy: ReviewPolicy


@dataclass(frozen=True)
class ProposalView:
    """One proposal, its conflicts now, and what each conflicting skill says now."""

    name: str
    version: int
    proposal: Proposal
    conflicts: list[str]
    current_images: dict[str, dict[str, Any] | None]
    policy: ReviewPolicy


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
) -> ProposalList:
    """The proposals of ``status`` (None: all) touching ``section`` (if given), ``limit`` from ``offset``."""
    review = existing_store(fleet, principal, READ, name).review
    pending = review.pending_count()
    if status is ProposalStatus.PENDING and section is None:
        # The pending queue is read a page at a time; the rest are in one hash, read whole.
        total, shown = pending, review.proposals(status, limit=limit, offset=offset)
    else:
        every = review.proposals(status, limit=_EVERY, section=section)
        total, shown = len(every), every[offset : offset + limit]
    conflicts = {p.id: conflicts_of(review, p) for p in shown}
    return ProposalList(name, pending, total, shown, conflicts, review.policy())


def show_proposal(fleet: FleetClient, principal: Principal, name: str, proposal_id: str) -> ProposalView:
    """One proposal in full; UnknownProposalError if the skillbook has none of that id."""
    store = existing_store(fleet, principal, READ, name)
    review = store.review
    proposal = review.get(proposal_id)
    conflicts = conflicts_of(review, proposal)
    images = {skill_id: store.read_skill(skill_id)[1] for skill_id in conflicts}
    return ProposalView(name, store.version(), proposal, conflicts, images, review.policy())


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
