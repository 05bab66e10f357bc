"""The console's review area: what learning proposed under a review policy, and deciding it.

The queue (``/skillbooks/NAME/review``) lists a skillbook's proposals by status and
section, a page at a time, each with its operations, evidence and conflicts; one
proposal has a page of its own with the approve and reject forms. Reading and
deciding are the operations of :mod:`ace_workers.operations.review`, as for the CLI
and the MCP tools, with the signed-in user as the principal (and the change log's actor).
"""

from __future__ import annotations

import math
from typing import Any
from urllib.parse import quote

from starlette.routing import BaseRoute

from ....distributed.store.keys import validate_skillbook_name
from ....distributed.store.proposals import Proposal, ProposalStatus
from ....operations import review as operations
from ...errors import BadRequestError
from ...views import ActionResult, View, action, page
from .items import policy_item, proposal_item

__all__ = [
    "ROUTES",
    "approve_proposal",
    "reject_proposal",
    "review_proposal",
    "review_queue",
]

STATUSES = ("pending", "approved", "rejected", "all")
PER_PAGE = 20
_TRUE, _FALSE = ("1", "true", "on", "yes"), ("", "0", "false", "off", "no")


def _name(view: View) -> str:
    """The skillbook the URL names; 400 if it cannot name one."""
    name = view.path("name")
    try:
        return validate_skillbook_name(name)
    except ValueError as exc:
        raise BadRequestError(str(exc)) from None


def review_queue(view: View) -> dict[str, Any]:
    """A skillbook's proposals (pending by default), oldest first, a page at a time, with the policy."""
    status_name = view.query("status", "pending")
    if status_name not in STATUSES:
        raise BadRequestError(f"status={status_name!r}: use one of {', '.join(STATUSES)}")
    status = None if status_name == "all" else ProposalStatus(status_name)
    section = view.query("section").strip() or None
    per_page = view.int_query("per_page", PER_PAGE, minimum=1, maximum=200)
    number = view.int_query("page", 1, minimum=1)
    listed = operations.list_proposals(
        view.state.fleet,
        view.acting,
        _name(view),
        status=status,
        section=section,
        limit=per_page,
        offset=(number - 1) * per_page,
    )
    base = _base(listed.name)
    return {
        "name": listed.name,
        "policy": policy_item(listed.policy),
        "pending": listed.pending,
        "status": status_name,
        "section": section or "",
        "page": number,
        "pages": max(1, math.ceil(listed.total / per_page)),
        "per_page": per_page,
        "total": listed.total,
        "proposals": [proposal_item(p, listed.conflicts[p.id], base=base) for p in listed.proposals],
    }


def review_proposal(view: View) -> dict[str, Any]:
    """One proposal in full: operations, evidence, the skills as it saw them and as they are if changed."""
    shown = operations.show_proposal(view.state.fleet, view.acting, _name(view), view.path("proposal_id"))
    item = proposal_item(shown.proposal, shown.conflicts, full=True, base=_base(shown.name))
    # What a conflicting skill says now, beside what it said when proposed.
    item["current_images"] = shown.current_images
    return {
        "name": shown.name,
        "version": shown.version,
        "policy": policy_item(shown.policy),
        "proposal": item,
    }


def approve_proposal(view: View) -> ActionResult:
    """Apply a pending proposal as one new version; 409 naming the conflicts unless despite_conflicts."""
    name = _name(view)
    decided = operations.approve_proposal(
        view.state.fleet,
        view.acting,
        name,
        view.path("proposal_id"),
        note=view.query("note"),
        despite_conflicts=_flag(view, "despite_conflicts"),
    )
    return _decided(name, decided)


def reject_proposal(view: View) -> ActionResult:
    """Reject a pending proposal: nothing of it applies; the decision is logged."""
    name = _name(view)
    decided = operations.reject_proposal(
        view.state.fleet, view.acting, name, view.path("proposal_id"), note=view.query("note")
    )
    return _decided(name, decided)


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
        # Back to the queue: the next proposal is what a reviewer wants.
        f"{_base(name)}/review",
        {
            "proposal_id": decided.id,
            "status": decided.status.value,
            "actor": decision.actor,
            "note": decision.note,
            "version": decision.version,
            "despite_conflicts": ",".join(decision.despite_conflicts),
        },
        notice=f"proposal-{decided.status.value}",
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
        role=None,  # the operation authorizes: role review
        summary="Approve a proposal (fields note, despite_conflicts): it applies as one new version.",
        target="{name}/{proposal_id}",
    ),
    *action(
        "/skillbooks/{name}/review/{proposal_id}/reject",
        reject_proposal,
        name="review:reject",
        role=None,  # the operation authorizes: role review
        summary="Reject a proposal (field note): nothing of it applies; the decision is logged.",
        target="{name}/{proposal_id}",
    ),
]
