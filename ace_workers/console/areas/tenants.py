"""The console's tenants area: the teams sharing the fleet, what each owns, gets and spends.

Per tenant: what it owns (named skillbooks, prefixes, and the skillbooks that are its now),
its weight and cap in the admission window, its samples in flight (admission) and waiting
for budget, and its budgets with what was spent against them per model and window. The
spend is :func:`~ace_workers.distributed.tenancy.usage.usage_report`'s, the document
``ace-workers tenant usage --json`` prints, so the page and the CLI cannot disagree.

Tenants are read from Redis on each request (one HGETALL), not from the process's cached
view: this page is where an operator checks a change just made with ``tenant set``.
An operator sees every tenant; an API key's principal sees its own only, and another
tenant's page answers 404 as a missing one does. Changing tenants stays in the CLI.
"""

from __future__ import annotations

from typing import Any

from starlette.routing import BaseRoute

from ...distributed.store.batches import BatchState
from ...distributed.store.keys import DEFAULT_TENANT
from ...distributed.store.store import read_registry
from ...distributed.tenancy.deferred_samples import DeferredSamples
from ...distributed.tenancy.errors import InvalidTenantError
from ...distributed.tenancy.tenants import Tenant, TenantMap, validate_tenant_name
from ...distributed.tenancy.usage import TenantReport, usage_report
from ..errors import BadRequestError, NotFoundError
from ..views import View, page

__all__ = ["ROUTES", "tenant_page", "tenants_index"]

# How often the tenants pages reload themselves (spend and in-flight counts move).
REFRESH_SECONDS = 10


def tenants_index(view: View) -> dict[str, Any]:
    """Every tenant this principal may see, with ownership, share of the fleet, and spend vs budget."""
    tenants = view.service.runtime.tenants.registry.map()
    names = [
        name for name in _tenant_names(view, tenants) if view.fleet_wide or name == view.principal.tenant
    ]
    return {
        "tenants": _rows(view, tenants, names),
        "admission_window": view.service.runtime.settings.admission_window,
        "refresh_seconds": REFRESH_SECONDS,
    }


def tenant_page(view: View) -> dict[str, Any]:
    """One tenant: what ``tenants_index`` shows of it, and its running batches."""
    name = view.path("tenant")
    try:
        validate_tenant_name(name)
    except InvalidTenantError as exc:
        raise BadRequestError(str(exc)) from None
    missing = f"no tenant {name!r} in this fleet"
    if not view.fleet_wide and name != view.principal.tenant:
        raise NotFoundError(missing)  # another tenant's: the same answer as one never added
    tenants = view.service.runtime.tenants.registry.map()
    if name not in _tenant_names(view, tenants):
        raise NotFoundError(missing)
    (row,) = _rows(view, tenants, [name])
    return {**row, "batches": _running_batches(view, name), "refresh_seconds": REFRESH_SECONDS}


def _tenant_names(view: View, tenants: TenantMap) -> list[str]:
    """The stored tenants, ``default``, and any tenant with deferred samples (as ``tenant usage``)."""
    deferring = DeferredSamples(view.state.redis, prefix=view.state.prefix).tenants()
    # A name in Redis is untrusted: one that cannot name a tenant is left out, not a failed page.
    valid = [name for name in deferring if _is_tenant_name(name)]
    return sorted({*tenants.tenants, DEFAULT_TENANT, *valid})


def _is_tenant_name(name: str) -> bool:
    try:
        validate_tenant_name(name)
    except InvalidTenantError:
        return False
    return True


def _rows(view: View, tenants: TenantMap, names: list[str]) -> list[dict[str, Any]]:
    """One row per tenant named: its settings, what it owns now, in flight, waiting, and usage."""
    runtime = view.service.runtime
    deferrals = DeferredSamples(view.state.redis, prefix=view.state.prefix)
    reports = {
        report.tenant: report for report in usage_report(tenants, deferrals, runtime.limiter, names).tenants
    }
    in_flight = runtime.admission.in_flight()
    owned: dict[str, list[str]] = {}
    # A member no skillbook can have is left out here (the skillbooks page names it).
    for skillbook in read_registry(view.state.redis, view.state.prefix)[0]:
        owned.setdefault(tenants.tenant_of(skillbook), []).append(skillbook)
    return [
        _row(
            tenants.tenants.get(name) or Tenant(name),
            stored=name in tenants.tenants,
            owned=sorted(owned.get(name, [])),
            in_flight=in_flight.get(name, 0),
            report=reports[name],
        )
        for name in names
    ]


def _row(
    tenant: Tenant, *, stored: bool, owned: list[str], in_flight: int, report: TenantReport
) -> dict[str, Any]:
    return {
        "name": tenant.name,
        # default exists without being added; a tenant known only from its deferred samples was removed.
        "stored": stored,
        "skillbooks": list(tenant.skillbooks),
        "prefixes": list(tenant.prefixes),
        "owned_skillbooks": owned,
        "weight": tenant.weight,
        "max_in_flight": tenant.max_in_flight,
        "on_budget": tenant.on_budget,
        "budgets": [budget.to_dict() for budget in tenant.budgets],
        "in_flight": in_flight,
        # The tenant's part of `tenant usage --json`, as it prints it.
        "waiting_for_budget": report.deferred,
        "usage": [row.to_dict() for row in report.rows],
    }


def _running_batches(view: View, name: str) -> list[dict[str, Any]]:
    """The tenant's running batches, newest first, with their counts."""
    batches = view.service.runtime.batches
    rows = []
    for status in batches.statuses(batches.running()):
        # The tenant recorded on the batch is the one its samples count against (admission,
        # budgets); a key still sees only batches of skillbooks its tenant owns now.
        if status.tenant == name and status.state is BatchState.RUNNING and view.can_see(status.skillbook):
            rows.append(
                {**status.to_dict(), "finished": status.done + status.failed, "created": status.created}
            )
    return sorted(rows, key=lambda row: row["created"], reverse=True)


ROUTES: list[BaseRoute] = [
    *page(
        "/tenants",
        "tenants/index.html",
        tenants_index,
        name="tenants",
        summary="Every tenant: what it owns, weight and cap, samples in flight and waiting, spend vs budget.",
    ),
    *page(
        "/tenants/{tenant}",
        "tenants/tenant.html",
        tenant_page,
        name="tenant",
        summary="One tenant as /api/tenants shows it, with its skillbooks linked and its running batches.",
    ),
]
