"""The console's areas, one module each: its views (page + API) and actions, as a list of routes."""

from __future__ import annotations

from starlette.routing import BaseRoute

from . import batches, evaluations, fleet, history, review, skillbooks, tenants

__all__ = ["AREAS"]

# In the order the navigation lists them.
AREAS: tuple[list[BaseRoute], ...] = (
    skillbooks.ROUTES,
    history.ROUTES,
    review.ROUTES,
    evaluations.ROUTES,
    batches.ROUTES,
    fleet.ROUTES,
    tenants.ROUTES,
)
