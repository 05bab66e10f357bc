"""The console's review area: what learning proposed under a review policy, and deciding it.

The queue (``/skillbooks/NAME/review``) lists a skillbook's proposals by status and
section, a page at a time, each with its operations, evidence and conflicts; one
proposal has a page of its own with the approve and reject forms. Deciding goes
through ``store.review`` as the CLI and the MCP tools do, with the signed-in user
as the change log's actor.
"""

from __future__ import annotations

import math
from typing import Any
from urllib.parse import quote

from starlette.routing import BaseRoute

from ...distributed.store.errors import ProposalDecidedError
from ...distributed.store.proposals import Proposal, ProposalStatus
from ...errors import InvalidConsolidationError
from ..errors import BadRequestError, ReviewRefusedError
from ..views import ActionResult, View, action, page
from .review_items import conflicts_of, policy_item, proposal_item

__all__ = [
    "ROUTES",
    "ReviewRefusedError",
    "approve_proposal",
    "reject_proposal",
    "review_proposal",
    "review_queue",
]

STATUSES = ("pending", "approved", "rejected", "all")
PER_PAGE = 20
_EVERY = 10**9  # a limit no skillbook's proposals reach
_TRUE, _FALSE = ("1", "true", "on", "yes"), ("", "0", "false", "off", "no")


def review_queue(view: View) -> dict[str, Any]:
    """A skillbook's proposals (pending by default), oldest first, a page at a time, with the policy."""
    store = view.store()
    review = store.review
    status_name = view.query("status", "pending")
    if status_name not in STATUSES:
        raise BadRequestError(f"status={status_name!r}: use one of {', '.join(STATUSES)}")
    status = None if status_name == "all" else ProposalStatus(status_name)
    section = view.query("section").strip() or None
    per_page = view.int_query("per_page", PER_PAGE, minimum=1, maximum=200)
    number = view.int_query("page", 1, minimum=1)
    offset = (number - 1) * per_page
    pending = review.pending_count()
    shown: list[Proposal]
    if status is ProposalStatus.PENDING and section is None:
        # The pending queue is read a page at a time; the rest are in one hash, read whole.
        total = pending
        shown = review.proposals(status, limit=per_page, offset=offset)
    else:
        every = review.proposals(status, limit=_EVERY, section=section)
        total, shown = len(every), every[offset : offset + per_page]
    base = _base(store.name)
    return {
        "name": store.name,
        "policy": policy_item(review.policy()),
        "pending": pending,
        "status": status_name,
        "section": section or "",
        "page": number,
        "pages": max(1, math.ceil(total / per_page)),
        "per_page": per_page,
        "total": total,
        "proposals": [proposal_item(p, conflicts_of(review, p), base=base) for p in shown],
    }


def review_proposal(view: View) -> dict[str, Any]:
    """One proposal in full: operations, evidence, the skills as it saw them and as they are if changed."""
    store = view.store()
    review = store.review
    proposal = review.get(view.path("proposal_id"))  # UnknownProposalError: 404 naming it
    conflicts = conflicts_of(review, proposal)
    item = proposal_item(proposal, conflicts, full=True, base=_base(store.name))
    # What a conflicting skill says now, beside what it said when proposed.
    item["current_images"] = {skill_id: store.read_skill(skill_id)[1] for skill_id in conflicts}
    return {
        "name": store.name,
        "version": store.version(),
        "policy": policy_item(review.policy()),
        "proposal": item,
    }


def approve_proposal(view: View) -> ActionResult:
    """Apply a pending proposal as one new version; 409 naming the conflicts unless despite_conflicts."""
    store = view.store()
    proposal_id = view.path("proposal_id")
    despite = _flag(view, "despite_conflicts")
    try:
        decided = store.review.approve(
            proposal_id, actor=view.actor, note=view.query("note"), despite_conflicts=despite
        )
    except (ProposalDecidedError, InvalidConsolidationError) as exc:
        raise ReviewRefusedError(str(exc)) from None
    return _decided(store.name, decided)


def reject_proposal(view: View) -> ActionResult:
    """Reject a pending proposal: nothing of it applies; the decision is logged."""
    store = view.store()
    try:
        decided = store.review.reject(view.path("proposal_id"), actor=view.actor, note=view.query("note"))
    except ProposalDecidedError as exc:
        raise ReviewRefusedError(str(exc)) from None
    return _decided(store.name, decided)


def _decided(name: str, decided: Proposal) -> ActionResult:
    decision = decided.decision
    assert decision is not None  # a decided proposal has one
    despite = (
        f" (despite conflicts on {', '.join(decision.despite_conflicts)})"
        if decision.despite_conflicts
        else ""
    )
    message = (
        f"proposal {decided.id} {decided.status.value} by {decision.actor}{despite}: "
        f"skillbook {name!r} now version {decision.version}"
    )
    return ActionResult(
        message,
        # Back to the queue: the next proposal is what a reviewer wants; the notice names the version.
        f"{_base(name)}/review",
        {
            "proposal_id": decided.id,
            "status": decided.status.value,
            "actor": decision.actor,
            "note": decision.note,
            "version": decision.version,
            "despite_conflicts": ",".join(decision.despite_conflicts),
        },
    )


def _flag(view: View, name: str) -> bool:
    """A yes/no parameter (a checkbox sends "on"; JSON true arrives as "True"); 400 naming it otherwise."""
    raw = view.query(name).strip().lower()
    if raw in _TRUE:
        return True
    if raw in _FALSE:
        return False
    raise BadRequestError(f"{name}={raw!r}: expected true or false")


def _base(name: str) -> str:
    return f"/skillbooks/{quote(name, safe='')}"


ROUTES: list[BaseRoute] = [
    *page(
        "/skillbooks/{name}/review",
        "review/queue.html",
        review_queue,
        name="review",
        summary="A skillbook's proposals (status, section, page) with evidence and conflicts; the policy.",
    ),
    *page(
        "/skillbooks/{name}/review/{proposal_id}",
        "review/proposal.html",
        review_proposal,
        name="review:proposal",
        summary="One proposal in full: operations, evidence, the skills it saw, its conflicts, the decision.",
    ),
    *action(
        "/skillbooks/{name}/review/{proposal_id}/approve",
        approve_proposal,
        name="review:approve",
        role="review",
        summary="Approve a proposal (fields note, despite_conflicts): it applies as one new version.",
        target="{name}/{proposal_id}",
    ),
    *action(
        "/skillbooks/{name}/review/{proposal_id}/reject",
        reject_proposal,
        name="review:reject",
        role="review",
        summary="Reject a proposal (field note): nothing of it applies; the decision is logged.",
        target="{name}/{proposal_id}",
    ),
]
