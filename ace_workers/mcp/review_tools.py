"""The steering tools of the fleet's skillbook: its proposals (list, approve, reject), its labels, its
skills' lifecycle.

Only the fleet back end has them (its skillbook is the versioned one in Redis). The requests
and responses here are the tools' schemas; each function calls the operation of
:mod:`ace_workers.operations` the CLI and the console call, as the tool's caller.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..distributed.store.proposals import ProposalStatus
from ..operations import FleetClient, Principal
from ..operations import labels as label_operations
from ..operations import lifecycle as lifecycle_operations
from ..operations import review as review_operations
from ..operations.outcomes import outcome_of

__all__ = [
    "LabelMoveResponse",
    "LabelSetRequest",
    "ProposalItem",
    "ReviewApproveRequest",
    "ReviewDecisionItem",
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
OPTIONAL_PROPOSAL_ID = Field(
    default=None,
    min_length=1,
    max_length=64,
    pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$",
    description="The proposal's id (or give proposal_ids).",
)
PROPOSAL_IDS: Any = Field(
    default_factory=list,
    max_length=100,
    description="Several proposals' ids, each decided on its own (instead of proposal_id).",
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
    count: int = Field(default=1, description="How many writes (samples) proposed these operations.")
    duplicate_of: list[str] = Field(
        default_factory=list,
        description="Pending: the active skills it restates (approving changes nothing).",
    )
    decision: dict[str, Any] | None = None


class ReviewListResponse(BaseModel):
    """The proposals asked for, and how many are pending in all."""

    skillbook: str
    pending: int = Field(ge=0)
    proposals: list[ProposalItem]


class _Decide(_Request):
    proposal_id: str | None = OPTIONAL_PROPOSAL_ID
    proposal_ids: list[str] = PROPOSAL_IDS
    note: str = NOTE

    @model_validator(mode="after")
    def _one_way_to_name_them(self) -> _Decide:
        if (self.proposal_id is None) == (not self.proposal_ids):
            raise ValueError("give proposal_id or proposal_ids (one of them)")
        for proposal_id in self.proposal_ids:
            _Id.model_validate({"id": proposal_id})
        return self

    def ids(self) -> list[str]:
        """The proposals named, in order."""
        return [self.proposal_id] if self.proposal_id is not None else self.proposal_ids


class _Id(BaseModel):
    id: str = PROPOSAL_ID


class ReviewApproveRequest(_Decide):
    """Apply pending proposals to the skillbook, each as one new version (none for a duplicate)."""

    despite_conflicts: bool = Field(
        default=False, description="Apply it though a skill it touches changed since it was proposed."
    )


class ReviewRejectRequest(_Decide):
    """Reject pending proposals: nothing of them applies."""


class ReviewDecisionItem(BaseModel):
    """One proposal's decision as recorded, or why it was refused (nothing of it written)."""

    proposal_id: str
    status: str = Field(description="approved, rejected, or refused.")
    actor: str = ""
    note: str = ""
    version: int | None = Field(
        default=None, description="The version it made; none when it changed nothing."
    )
    no_op: bool = Field(default=False, description="Approved, but it changed nothing (it restated skills).")
    despite_conflicts: list[str] = Field(default_factory=list)
    error: str | None = Field(default=None, description="Refused: the error's kind (conflict, not_found).")
    message: str = ""


class ReviewDecisionResponse(BaseModel):
    """The decision as recorded: who, why, and the version that records it (one proposal_id), and
    each proposal's decision or refusal (``decisions``, also for proposal_ids)."""

    skillbook: str
    proposal_id: str | None = None
    status: str | None = None
    actor: str | None = None
    note: str = ""
    version: int | None = None
    no_op: bool = False
    despite_conflicts: list[str] = Field(default_factory=list)
    decisions: list[ReviewDecisionItem] = Field(default_factory=list)


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
            count=p.count,
            duplicate_of=listed.duplicates[p.id],
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
    """Approve (an approve request) or reject the proposals; one proposal_id refused raises, as ever."""
    approve = isinstance(request, ReviewApproveRequest)
    outcomes = review_operations.decide_proposals(
        fleet,
        principal,
        skillbook,
        request.ids(),
        approve=approve,
        note=request.note,
        despite_conflicts=isinstance(request, ReviewApproveRequest) and request.despite_conflicts,
    )
    items = [_decision_item(outcome) for outcome in outcomes]
    if request.proposal_id is None:
        return ReviewDecisionResponse(skillbook=skillbook, decisions=items)
    (outcome,) = outcomes
    if outcome.refused is not None:
        raise outcome.refused
    return ReviewDecisionResponse(
        skillbook=skillbook, **items[0].model_dump(exclude={"error", "message"}), decisions=items
    )


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


def _decision_item(outcome: review_operations.DecisionOutcome) -> ReviewDecisionItem:
    decided = outcome.decided
    if decided is None:
        assert outcome.refused is not None  # an outcome is one or the other
        return ReviewDecisionItem(
            proposal_id=outcome.proposal_id,
            status="refused",
            error=outcome_of(outcome.refused).kind,
            message=str(outcome.refused),
        )
    decision = decided.decision
    assert decision is not None  # a decided proposal has one
    return ReviewDecisionItem(
        proposal_id=decided.id,
        status=decided.status.value,
        actor=decision.actor,
        note=decision.note,
        version=decision.version,
        no_op=decision.no_op,
        despite_conflicts=decision.despite_conflicts,
    )
