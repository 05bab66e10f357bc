"""Tenants: the teams sharing the fleet, what they own, their share and budgets, and their spend.

Changing tenants is the fleet's configuration: the operator or a fleet-wide admin key only.
Reading them needs a fleet-wide key too (a tenant's key sees no other tenant). Releasing the
samples that waited for a budget a change raised sends messages: the command does that.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..distributed.tenancy.deferred_samples import DeferredSamples
from ..distributed.tenancy.tenants import DEFAULT_TENANT, Tenant, TenantMap
from ..distributed.tenancy.usage import UsageReport, usage_report
from .access import require_fleet_admin
from .fleet import FleetClient
from .principal import Principal

__all__ = [
    "TenantShown",
    "add_tenant",
    "change_tenant",
    "list_tenants",
    "remove_tenant",
    "show_tenant",
    "tenant_usage",
    "waiting_for_budget",
]


@dataclass(frozen=True)
class TenantShown:
    """A tenant with the existing skillbooks it owns now."""

    tenant: Tenant
    owned: list[str]

    def to_dict(self) -> dict[str, Any]:
        """The document ``tenant show --json`` prints (one item of ``tenant list --json``)."""
        return {**self.tenant.to_dict(), "owned_skillbooks": self.owned}


def add_tenant(fleet: FleetClient, principal: Principal, tenant: Tenant) -> Tenant:
    """Store a new tenant. Raises TenantExistsError, TenantConflictError (it would own another's)."""
    require_fleet_admin(principal, "add a tenant")
    return fleet.tenants.add(tenant)


def change_tenant(
    fleet: FleetClient, principal: Principal, name: str, change: Callable[[Tenant], Tenant]
) -> Tenant:
    """Apply ``change`` to tenant ``name`` ('default' too) in one atomic write; the tenant stored."""
    require_fleet_admin(principal, "change a tenant")
    return fleet.tenants.update(name, change)


def remove_tenant(fleet: FleetClient, principal: Principal, name: str) -> bool:
    """Remove tenant ``name``: its skillbooks go back to 'default'. False if none was stored."""
    require_fleet_admin(principal, "remove a tenant")
    return fleet.tenants.remove(name)


def list_tenants(fleet: FleetClient, principal: Principal) -> list[TenantShown]:
    """Every tenant ('default' always) by name, with the skillbooks each owns now."""
    require_fleet_admin(principal, "list the tenants")
    tenants = TenantMap(fleet.tenants.all())
    owned = _owned(fleet, tenants)
    names = sorted({*tenants.tenants, DEFAULT_TENANT})
    return [TenantShown(tenants.get(name), owned.get(name, [])) for name in names]


def show_tenant(fleet: FleetClient, principal: Principal, name: str) -> TenantShown:
    """Tenant ``name`` with the skillbooks it owns now. Raises UnknownTenantError."""
    require_fleet_admin(principal, "show a tenant")
    tenants = TenantMap(fleet.tenants.all())
    tenant = fleet.tenants.get(name)
    return TenantShown(tenant, _owned(fleet, tenants).get(name, []))


def tenant_usage(fleet: FleetClient, principal: Principal, name: str | None = None) -> UsageReport:
    """What each tenant (or ``name``) spent per model and window against its budgets, and what waits."""
    require_fleet_admin(principal, "read the tenants' usage")
    deferrals = DeferredSamples(fleet.redis, prefix=fleet.prefix)
    return usage_report(fleet.tenant_map(), deferrals, fleet.limiter, None if name is None else [name])


def waiting_for_budget(fleet: FleetClient, name: str) -> bool:
    """True if samples of tenant ``name`` wait for budget (a change may release them)."""
    return next(DeferredSamples(fleet.redis, prefix=fleet.prefix).fields(name), None) is not None


def _owned(fleet: FleetClient, tenants: TenantMap) -> dict[str, list[str]]:
    """The existing skillbooks by the tenant owning them now."""
    owned: dict[str, list[str]] = {}
    for name in fleet.skillbook_registry()[0]:  # a bad member is named by the skillbooks list
        owned.setdefault(tenants.tenant_of(name), []).append(name)
    return owned
