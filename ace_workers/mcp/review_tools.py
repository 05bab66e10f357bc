"""The review tools: list the proposals of the fleet's skillbook, approve or reject one.

Only the fleet back end has proposals (its skillbook is the versioned one in
Redis, learned under a review policy); the requests and responses here are the
tools' schemas, and the functions serve them from a store's ``review``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..distributed.store.errors import ProposalConflictError, ProposalDecidedError, UnknownProposalError
from ..distributed.store.proposals import Proposal, ProposalStatus
from ..distributed.store.review import SkillbookReview
from ..errors import InvalidConsolidationError
from .errors import InvalidToolRequest, ReviewRefusedError

__all__ = [
    "ProposalItem",
    "ReviewApproveRequest",
    "ReviewDecisionResponse",
    "ReviewListRequest",
    "ReviewListResponse",
    "ReviewRejectRequest",
    "decide_proposal",
    "list_proposals",
]

PROPOSAL_ID = Field(
    min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$", description="The proposal's id."
)
NOTE = Field(default="", max_length=2000, description="Why: recorded with the decision in the change log.")


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ReviewListRequest(_Request):
    """List the proposals of the skillbook, oldest first: what learning wants to change."""

    status: Literal["pending", "approved", "rejected", "all"] = "pending"
    limit: int = Field(default=50, ge=1, le=500, description="Most proposals to return.")


class ProposalItem(BaseModel):
    """One proposal as clients see it."""

    id: str
    kind: str = Field(description="update (SkillManager operations) or consolidate (dedup).")
    status: str
    created_at: str
    operations: list[dict[str, Any]]
    reasoning: str = ""
    source: dict[str, Any] = Field(default_factory=dict, description="Batch, epoch, sample, step.")
    conflicts: list[str] = Field(
        default_factory=list, description="Pending: skills it touches that changed since it was proposed."
    )
    decision: dict[str, Any] | None = None


class ReviewListResponse(BaseModel):
    """The proposals asked for, and how many are pending in all."""

    skillbook: str
    pending: int = Field(ge=0)
    proposals: list[ProposalItem]


class ReviewApproveRequest(_Request):
    """Apply a pending proposal to the skillbook as one new version."""

    proposal_id: str = PROPOSAL_ID
    note: str = NOTE
    despite_conflicts: bool = Field(
        default=False, description="Apply it though a skill it touches changed since it was proposed."
    )


class ReviewRejectRequest(_Request):
    """Reject a pending proposal: nothing of it applies."""

    proposal_id: str = PROPOSAL_ID
    note: str = NOTE


class ReviewDecisionResponse(BaseModel):
    """The decision as recorded: who, why, and the version that records it."""

    skillbook: str
    proposal_id: str
    status: str
    actor: str
    note: str = ""
    version: int | None = None
    despite_conflicts: list[str] = Field(default_factory=list)


def list_proposals(review: SkillbookReview, request: ReviewListRequest) -> ReviewListResponse:
    """The proposals ``request`` asks for, each pending one with its conflicts now."""
    status = None if request.status == "all" else ProposalStatus(request.status)
    items = [
        ProposalItem(
            id=p.id,
            kind=p.kind.value,
            status=p.status.value,
            created_at=p.created_at,
            operations=p.operations,
            reasoning=p.reasoning,
            source=p.source,
            conflicts=review.conflicts(p) if p.status is ProposalStatus.PENDING else [],
            decision=p.decision.model_dump() if p.decision else None,
        )
        for p in review.proposals(status, limit=request.limit)
    ]
    return ReviewListResponse(skillbook=review.name, pending=review.pending_count(), proposals=items)


def decide_proposal(
    review: SkillbookReview, request: ReviewApproveRequest | ReviewRejectRequest, *, actor: str
) -> ReviewDecisionResponse:
    """Approve (an approve request) or reject the proposal; refusals name why."""
    try:
        if isinstance(request, ReviewApproveRequest):
            decided = review.approve(
                request.proposal_id,
                actor=actor,
                note=request.note,
                despite_conflicts=request.despite_conflicts,
            )
        else:
            decided = review.reject(request.proposal_id, actor=actor, note=request.note)
    except UnknownProposalError as exc:
        raise InvalidToolRequest(str(exc)) from None
    except (ProposalDecidedError, ProposalConflictError, InvalidConsolidationError) as exc:
        # Decided already, changed since, or a consolidation naming a skill that is gone now.
        raise ReviewRefusedError(str(exc)) from None
    return _decision_response(review.name, decided)


def _decision_response(skillbook: str, decided: Proposal) -> ReviewDecisionResponse:
    decision = decided.decision
    assert decision is not None  # a decided proposal has one
    return ReviewDecisionResponse(
        skillbook=skillbook,
        proposal_id=decided.id,
        status=decided.status.value,
        actor=decision.actor,
        note=decision.note,
        version=decision.version,
        despite_conflicts=decision.despite_conflicts,
    )
