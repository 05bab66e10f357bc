"""The console's audit log: who did what through the console, newest first."""

from __future__ import annotations

from typing import Any

from starlette.routing import BaseRoute

from ..audit import read_audit
from ..views import View, page

__all__ = ["ROUTES"]


def audit_log(view: View) -> dict[str, Any]:
    """The audit log's newest entries a caller may see."""
    limit = view.int_query("limit", 100, minimum=1, maximum=1000)
    entries = read_audit(view.state.redis, view.state.prefix, limit)
    # A target is "NAME", "NAME/..." or a fleet-wide one ("dead-letters"): a tenant's key sees the
    # actions on its own skillbooks only.
    shown = [entry for entry in entries if view.fleet_wide or view.can_see(entry.target.split("/", 1)[0])]
    return {"entries": [entry.to_dict() for entry in shown]}


ROUTES: list[BaseRoute] = [
    *page("/audit", "audit.html", audit_log, name="audit", summary="The console's audit log, newest first."),
]
