"""The console's areas, a subpackage each (or a module, when one is enough): its views (page +
API) and actions as a list of routes, and the links it puts in the navigation.

:data:`AREAS` is the one list: the app mounts every area's routes from it, and the header's
navigation (``base.html``) shows every area's links from it, in this order.
"""

from __future__ import annotations

from dataclasses import dataclass

from starlette.routing import BaseRoute

from . import audit, batches, evaluations, fleet, forget, history, review, skillbooks, tenants

__all__ = ["AREAS", "NAVIGATION", "Area", "NavLink"]


@dataclass(frozen=True)
class NavLink:
    """A link of the header's navigation: its label, and the path it opens (active below it)."""

    label: str
    path: str


@dataclass(frozen=True)
class Area:
    """One area of the console: its routes, and the links it puts in the navigation (none for
    areas reached from a skillbook's page: history, review, evaluations)."""

    routes: list[BaseRoute]
    nav: tuple[NavLink, ...] = ()


AREAS: tuple[Area, ...] = (
    Area(skillbooks.ROUTES, (NavLink("Skillbooks", "/skillbooks"),)),
    Area(history.ROUTES),
    Area(review.ROUTES),
    Area(evaluations.ROUTES),
    Area(batches.ROUTES, (NavLink("Batches", "/batches"), NavLink("Dead letters", "/dead-letters"))),
    Area(fleet.ROUTES, (NavLink("Fleet", "/fleet"),)),
    Area(tenants.ROUTES, (NavLink("Tenants", "/tenants"),)),
    Area(audit.ROUTES, (NavLink("Audit", "/audit"),)),
    Area(forget.ROUTES, (NavLink("Forget", "/forget"),)),
)

# The header's links, in order.
NAVIGATION: tuple[NavLink, ...] = tuple(link for area in AREAS for link in area.nav)
