"""The console's review area: what learning proposed under a review policy, and deciding it.

The queue (``/skillbooks/NAME/review``) lists a skillbook's proposals by status,
section, kind of operation and duplicates, a page at a time, each with its operations,
evidence, how many writes proposed it, its conflicts and the active skills it restates;
its bulk form approves or rejects the proposals ticked, or every one the filters pick
(``/skillbooks/NAME/review/decide``: one audit line per proposal). One proposal has a
page of its own with the approve and reject forms. Reading and
deciding are the operations of :mod:`ace_workers.operations.review`, as for the CLI
and the MCP tools, with the signed-in user as the principal (and the change log's actor).
"""

from __future__ import annotations

import math
from typing import Any
from urllib.parse import quote

from starlette.routing import BaseRoute

from ....counts import counted
from ....distributed.store.keys import validate_skillbook_name
from ....distributed.store.proposals import Proposal, ProposalStatus
from ....distributed.store.review_policy import POLICY_SUBJECTS
from ....operations import review as operations
from ...errors import BadRequestError
from ...views import ActionResult, AuditItem, View, action, page
from .items import policy_item, proposal_item

__all__ = [
    "ROUTES",
    "approve_proposal",
    "decide_proposals",
    "reject_proposal",
    "review_proposal",
    "review_queue",
]

STATUSES = ("pending", "approved", "rejected", "all")
PER_PAGE = 20
_TRUE, _FALSE = ("1", "true", "on", "yes"), ("", "0", "false", "off", "no")
DECISIONS = {"approve": "approved", "reject": "rejected"}  # a decision, and what it makes a proposal
_MAX_IDS = 500  # of one bulk decision by ids


def _name(view: View) -> str:
    """The skillbook the URL names; 400 if it cannot name one."""
    name = view.path("name")
    try:
        return validate_skillbook_name(name)
    except ValueError as exc:
        raise BadRequestError(str(exc)) from None


def _picked(view: View) -> operations.ProposalFilter:
    """The filters of the queue and of a bulk decision: section, op, duplicates; 400 naming a bad one."""
    section = view.query("section").strip() or None
    operation = view.query("op").strip().upper() or None
    if operation is not None and operation not in POLICY_SUBJECTS:
        raise BadRequestError(f"op={operation!r}: use one of {', '.join(POLICY_SUBJECTS)}")
    return operations.ProposalFilter(
        section=section, operation=operation, duplicates=_flag(view, "duplicates")
    )


def review_queue(view: View) -> dict[str, Any]:
    """A skillbook's proposals (pending by default), oldest first, a page at a time, with the policy."""
    status_name = view.query("status", "pending")
    if status_name not in STATUSES:
        raise BadRequestError(f"status={status_name!r}: use one of {', '.join(STATUSES)}")
    status = None if status_name == "all" else ProposalStatus(status_name)
    picked = _picked(view)
    per_page = view.int_query("per_page", PER_PAGE, minimum=1, maximum=200)
    number = view.int_query("page", 1, minimum=1)
    listed = operations.list_proposals(
        view.state.fleet,
        view.acting,
        _name(view),
        status=status,
        limit=per_page,
        offset=(number - 1) * per_page,
        picked=picked,
    )
    base = _base(listed.name)
    return {
        "name": listed.name,
        "policy": policy_item(listed.policy),
        "pending": listed.pending,
        "status": status_name,
        "section": picked.section or "",
        "op": picked.operation or "",
        "duplicates": picked.duplicates,
        "operation_kinds": list(POLICY_SUBJECTS),
        "page": number,
        "pages": max(1, math.ceil(listed.total / per_page)),
        "per_page": per_page,
        "total": listed.total,
        "proposals": [
            proposal_item(p, listed.conflicts[p.id], base=base, duplicate_of=listed.duplicates[p.id])
            for p in listed.proposals
        ],
    }


def review_proposal(view: View) -> dict[str, Any]:
    """One proposal in full: operations, evidence, the skills as it saw them and as they are if changed."""
    shown = operations.show_proposal(view.state.fleet, view.acting, _name(view), view.path("proposal_id"))
    item = proposal_item(
        shown.proposal, shown.conflicts, full=True, base=_base(shown.name), duplicate_of=shown.duplicate_of
    )
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


def decide_proposals(view: View) -> ActionResult:
    """Approve or reject (field decision) the proposals named (field ids) or, with all, every pending
    one the filters (section, op, duplicates) pick; one audit line per proposal."""
    name = _name(view)
    decision = view.query("decision").strip().lower()
    if decision not in DECISIONS:
        raise BadRequestError(f"decision={decision!r}: use approve or reject")
    every = _flag(view, "all")
    ids = [i for i in view.query("ids").replace(",", " ").split() if i]
    picked = _picked(view)
    if every == bool(ids):
        raise BadRequestError("give the proposals' ids (field ids) or all=true, not both or neither")
    if len(ids) > _MAX_IDS:
        raise BadRequestError(f"ids: at most {_MAX_IDS} proposals at once (or use all=true)")
    if ids and picked.narrows:
        raise BadRequestError("section, op and duplicates narrow all=true; give all=true")
    outcomes = operations.decide_proposals(
        view.state.fleet,
        view.acting,
        name,
        None if every else ids,
        approve=decision == "approve",
        note=view.query("note"),
        despite_conflicts=_flag(view, "despite_conflicts"),
        picked=picked,
    )
    decided = [o.decided for o in outcomes if o.decided is not None]
    refused = [o for o in outcomes if o.refused is not None]
    message = f"{counted(len(decided), 'proposal')} {DECISIONS[decision]}, {len(refused)} refused"
    if refused:
        message += ": " + "; ".join(str(o.refused) for o in refused[:3])
    audited = [
        AuditItem(f"review:{decision}", f"{name}/{p.id}", "ok", _decision_data(p)) for p in decided
    ] + [AuditItem(f"review:{decision}", f"{name}/{o.proposal_id}", f"refused: {o.refused}") for o in refused]
    return ActionResult(
        message,
        f"{_base(name)}/review",
        {
            "decision": decision,
            "decided": [_decision_data(p) for p in decided],
            "refused": [{"proposal_id": o.proposal_id, "message": str(o.refused)} for o in refused],
        },
        audited,
        notice="proposals-partly-refused" if refused else "proposals-decided",
    )


def _decision_data(decided: Proposal) -> dict[str, Any]:
    decision = decided.decision
    assert decision is not None  # a decided proposal has one
    return {
        "proposal_id": decided.id,
        "status": decided.status.value,
        "actor": decision.actor,
        "note": decision.note,
        "version": decision.version,
        "no_op": decision.no_op,
        "despite_conflicts": ",".join(decision.despite_conflicts),
    }


def _decided(name: str, decided: Proposal) -> ActionResult:
    decision = decided.decision
    assert decision is not None  # a decided proposal has one
    despite = (
        f" (despite conflicts on {', '.join(decision.despite_conflicts)})"
        if decision.despite_conflicts
        else ""
    )
    made = (
        f"nothing changed; skillbook {name!r} keeps its version (no new version)"
        if decision.no_op
        else f"skillbook {name!r} now version {decision.version}"
    )
    message = f"proposal {decided.id} {decided.status.value} by {decision.actor}{despite}: {made}"
    return ActionResult(
        message,
        # Back to the queue: the next proposal is what a reviewer wants.
        f"{_base(name)}/review",
        _decision_data(decided),
        notice="proposal-unchanged" if decision.no_op else f"proposal-{decided.status.value}",
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
        summary="A skillbook's proposals (status, section, op, duplicates, page) with evidence, count, "
        "conflicts and the skills a duplicate restates; the policy.",
    ),
    *page(
        "/skillbooks/{name}/review/{proposal_id}",
        "review/proposal.html",
        review_proposal,
        name="review:proposal",
        summary="One proposal in full: operations, evidence, the skills it saw, its conflicts, the decision.",
    ),
    # "decide" is no proposal id (ids start with "p-"), and a proposal's own page answers GET only.
    *action(
        "/skillbooks/{name}/review/decide",
        decide_proposals,
        name="review:decide",
        role=None,  # the operation authorizes: role review
        summary="Approve or reject several proposals (fields decision, ids or all with section, op, "
        "duplicates; note, despite_conflicts): each its own decision, each audited.",
        target="{name}",
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
