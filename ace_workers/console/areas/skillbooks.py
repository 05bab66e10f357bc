"""The console's skillbooks area: every skillbook of the fleet at a glance."""

from __future__ import annotations

from typing import Any

from starlette.routing import BaseRoute

from ...distributed.store.store import list_skillbooks
from ..views import View, page

__all__ = ["ROUTES", "skillbooks_index"]


def skillbooks_index(view: View) -> dict[str, Any]:
    """Each skillbook: head version, active skills of its limit, labels, last change, pending proposals."""
    rows = []
    for name in list_skillbooks(view.state.redis, view.state.prefix):
        store = view.service.runtime.store(name)
        last = store.history(1) if store.exists() else []
        rows.append(
            {
                "name": name,
                "version": store.version(),
                "active_skills": store.active_skills(),
                "max_skills": store.max_skills,
                "labels": store.labels.all(),
                "last_change": last[0].time if last else None,
                "pending_proposals": store.review.pending_count(),
            }
        )
    return {"skillbooks": rows}


ROUTES: list[BaseRoute] = [
    *page(
        "/skillbooks",
        "skillbooks/index.html",
        skillbooks_index,
        name="skillbooks",
        summary="Every skillbook: version, active skills, labels, last change, pending proposals.",
    ),
]
