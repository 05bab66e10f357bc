"""The console's skillbooks area: every skillbook at a glance, one skillbook's skills, one skill.

The skillbook page lists its skills grouped by section, searched, filtered and
paged on the per-version skill index (distributed/store/skill_index.py), so a page of a
100,000-skill skillbook answers in milliseconds. The skill page and its
pin/unpin/archive/restore actions are in skillbooks_skill.py.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from starlette.routing import BaseRoute

from ....counts import counted
from ....distributed.store.errors import CorruptDataError
from ....distributed.store.skill_index import STATUS_FILTERS, skill_index
from ....distributed.store.store import read_registry
from ...errors import BadRequestError
from ...views import View, page
from ..change_digests import recent_digests
from .skill import SKILL_ROUTES, skill_url

__all__ = ["ROUTES", "skillbook_detail", "skillbooks_index"]

DEFAULT_PER_PAGE = 50
MAX_PER_PAGE = 500
MAX_QUERY_CHARS = 200


def skillbooks_index(view: View) -> dict[str, Any]:
    """Each skillbook: head version, active skills of its limit, labels, last change, pending proposals.

    A skillbook whose keys cannot be read (or a registry member no skillbook can have) is a
    row of its own naming the key: one bad record never hides the others.
    """
    names, unreadable = read_registry(view.state.redis, view.state.prefix)
    rows: list[dict[str, Any]] = []
    for name in names:
        if not view.can_see(name):  # an API key's principal: its tenant's skillbooks only
            continue
        try:
            rows.append(_index_row(view, name))
        except CorruptDataError as exc:
            rows.append({"name": name, "unreadable": str(exc)})
    if view.fleet_wide:  # a member that names no skillbook belongs to no tenant: the fleet's to see
        rows += [{"name": member, "unreadable": str(exc)} for member, exc in unreadable.items()]
    return {"skillbooks": rows}


def _index_row(view: View, name: str) -> dict[str, Any]:
    store = view.service.runtime.store(name)
    # The newest version's digest (kept per version), not its entry: an import's holds every skill.
    last = recent_digests(store, 1).digests if store.exists() else []
    return {
        "name": name,
        "version": store.version(),
        "active_skills": store.active_skills(),
        "max_skills": store.max_skills,
        "labels": store.labels.all(),
        "last_change": last[0].time if last else None,
        "pending_proposals": store.review.pending_count(),
        "unreadable": None,
    }


def skillbook_detail(view: View) -> dict[str, Any]:
    """One skillbook: version, fill, labels, pending proposals, and a page of its skills by section."""
    store = view.store()
    q = view.query("q").strip()
    if len(q) > MAX_QUERY_CHARS:
        raise BadRequestError(f"q: a search of {len(q)} characters; at most {MAX_QUERY_CHARS}")
    section = view.query("section")
    status = view.query("status", "active") or "active"
    if status not in STATUS_FILTERS:
        raise BadRequestError(f"status={status!r}: expected one of {', '.join(STATUS_FILTERS)}")
    number = view.int_query("page", 1, minimum=1)
    per_page = view.int_query("per_page", DEFAULT_PER_PAGE, minimum=1, maximum=MAX_PER_PAGE)
    index = skill_index(store)
    matches = index.find(status, q=q, section=section)
    pages = max(1, -(-matches.total // per_page))
    if number > pages:
        raise BadRequestError(
            f"page={number}: there {'is' if pages == 1 else 'are'} {counted(pages, 'page')} "
            f"of {per_page} skills"
        )
    base = f"/skillbooks/{quote(store.name, safe='')}"
    return {
        "name": store.name,
        "version": index.version,
        "active_skills": index.counts["active"],
        "max_skills": store.max_skills,
        "labels": store.labels.all(),
        "pending_proposals": store.review.pending_count(),
        "links": {
            "history": f"{base}/history",
            "review": f"{base}/review",
            "evaluations": f"{base}/evaluations",
        },
        "query": {"q": q, "section": section, "status": status, "page": number, "per_page": per_page},
        "status_counts": {name: index.counts[name] for name in STATUS_FILTERS},
        "total": matches.total,
        "pages": pages,
        "sections": [{"section": name, "count": count} for name, count in matches.sections],
        "groups": _groups(store.name, matches.page(number, per_page)),
    }


def _groups(skillbook: str, skills: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The page's skills as runs of one section each (they come grouped by section already)."""
    groups: list[dict[str, Any]] = []
    for skill in skills:
        if not groups or groups[-1]["section"] != skill["section"]:
            groups.append({"section": skill["section"], "skills": []})
        groups[-1]["skills"].append({**skill, "url": skill_url(skillbook, skill["id"])})
    return groups


ROUTES: list[BaseRoute] = [
    *page(
        "/skillbooks",
        "skillbooks/index.html",
        skillbooks_index,
        name="skillbooks",
        summary="Every skillbook: version, active skills, labels, last change, pending proposals.",
    ),
    *page(
        "/skillbooks/{name}",
        "skillbooks/detail.html",
        skillbook_detail,
        name="skillbook",
        summary=(
            "One skillbook: version, fill, labels, pending proposals, and its skills by section "
            f"(q: search id and content; section; status: {', '.join(STATUS_FILTERS)} [active]; "
            f"page; per_page [{DEFAULT_PER_PAGE}, at most {MAX_PER_PAGE}])."
        ),
    ),
    *SKILL_ROUTES,
]
