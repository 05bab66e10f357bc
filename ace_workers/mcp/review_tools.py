"""The steering tools of the fleet's skillbook: its proposals (list, approve, reject), its labels, its
skills' lifecycle.

Only the fleet back end has them (its skillbook is the versioned one in Redis). The requests
and responses here are the tools' schemas; each function calls the operation of
:mod:`ace_workers.operations` the CLI and the console call, as the tool's caller.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..distributed.store.proposals import Proposal, ProposalStatus
from ..operations import FleetClient, Principal
from ..operations import labels as label_operations
from ..operations import lifecycle as lifecycle_operations
from ..operations import review as review_operations

__all__ = [
    "LabelMoveResponse",
    "LabelSetRequest",
    "ProposalItem",
    "ReviewApproveRequest",
    "ReviewDecisionResponse",
    "ReviewListRequest",
    "ReviewListResponse",
    "ReviewRejectRequest",
    "SkillChangeRequest",
    "SkillChangeResponse",
    "change_skills",
    "decide_proposal",
    "list_proposals",
    "set_label",
]

PROPOSAL_ID = Field(
    min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$", description="The proposal's id."
)
NOTE = Field(default="", max_length=2000, description="Why: recorded with the change in the change log.")


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


class LabelSetRequest(_Request):
    """Point a label (prod, canary, ...) of the skillbook at a version; readers of NAME@LABEL serve it."""

    label: str = Field(min_length=1, max_length=64, description="The label.")
    version: int | None = Field(default=None, ge=1, description="The version; omitted: the head's.")
    expect: int | None = Field(
        default=None,
        ge=1,
        description="Move only if the label is at this version now (omitted: wherever it is).",
    )
    note: str = NOTE


class LabelMoveResponse(BaseModel):
    """The move as the label log records it."""

    skillbook: str
    label: str
    from_version: int | None
    to_version: int | None
    actor: str


class SkillChangeRequest(_Request):
    """Pin, unpin, archive or restore skills of the skillbook, as one version."""

    change: Literal["pin", "unpin", "archive", "restore"]
    skill_ids: list[str] = Field(min_length=1, max_length=100, description="The skills' ids.")
    note: str = NOTE


class SkillChangeResponse(BaseModel):
    """What the change did: the skills changed, those already so, and the version now."""

    skillbook: str
    change: str
    changed: list[str]
    unchanged: list[str]
    version: int


def list_proposals(
    fleet: FleetClient, principal: Principal, skillbook: str, request: ReviewListRequest
) -> ReviewListResponse:
    """The proposals ``request`` asks for, each pending one with its conflicts now."""
    status = None if request.status == "all" else ProposalStatus(request.status)
    listed = review_operations.list_proposals(fleet, principal, skillbook, status=status, limit=request.limit)
    items = [
        ProposalItem(
            id=p.id,
            kind=p.kind.value,
            status=p.status.value,
            created_at=p.created_at,
            operations=p.operations,
            reasoning=p.reasoning,
            source=p.source,
            conflicts=listed.conflicts[p.id],
            decision=p.decision.model_dump() if p.decision else None,
        )
        for p in listed.proposals
    ]
    return ReviewListResponse(skillbook=skillbook, pending=listed.pending, proposals=items)


def decide_proposal(
    fleet: FleetClient,
    principal: Principal,
    skillbook: str,
    request: ReviewApproveRequest | ReviewRejectRequest,
) -> ReviewDecisionResponse:
    """Approve (an approve request) or reject the proposal."""
    if isinstance(request, ReviewApproveRequest):
        decided = review_operations.approve_proposal(
            fleet,
            principal,
            skillbook,
            request.proposal_id,
            note=request.note,
            despite_conflicts=request.despite_conflicts,
        )
    else:
        decided = review_operations.reject_proposal(
            fleet, principal, skillbook, request.proposal_id, note=request.note
        )
    return _decision_response(skillbook, decided)


def set_label(
    fleet: FleetClient, principal: Principal, skillbook: str, request: LabelSetRequest
) -> LabelMoveResponse:
    """Move the label as asked."""
    expect = request.expect
    if expect is None:  # omitted: where the label is now, read here (None: not set yet)
        expect = label_operations.list_labels(fleet, principal, skillbook).labels.get(request.label)
    move = label_operations.set_label(
        fleet, principal, skillbook, request.label, request.version, note=request.note, expect=expect
    )
    return LabelMoveResponse(
        skillbook=skillbook,
        label=move.label,
        from_version=move.from_version,
        to_version=move.to_version,
        actor=move.actor,
    )


def change_skills(
    fleet: FleetClient, principal: Principal, skillbook: str, request: SkillChangeRequest
) -> SkillChangeResponse:
    """Make the lifecycle change asked for."""
    result = lifecycle_operations.change_skills(
        fleet, principal, skillbook, request.change, request.skill_ids, note=request.note
    )
    return SkillChangeResponse(
        skillbook=skillbook,
        change=request.change,
        changed=list(result.changed),
        unchanged=list(result.unchanged),
        version=result.version,
    )


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
