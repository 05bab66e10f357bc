"""Tenants: the teams sharing the fleet, what they own, their share and budgets, and their spend.

Changing tenants is the fleet's configuration: the operator or a fleet-wide admin key only.
Reading them needs a fleet-wide key too (a tenant's key sees no other tenant). Releasing the
samples that waited for a budget a change raised sends messages: the command does that, and so
does failing a removed tenant's waiting samples (it is passed in).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..distributed.tenancy.deferred_samples import DeferredSamples
from ..distributed.tenancy.tenants import DEFAULT_TENANT, Tenant, TenantMap
from ..distributed.tenancy.usage import UsageReport, usage_report
from .access import require_fleet_admin
from .errors import TenantBusyError
from .fleet import FleetClient
from .principal import Principal

__all__ = [
    "TenantShown",
    "TenantWork",
    "add_tenant",
    "change_tenant",
    "list_tenants",
    "remove_tenant",
    "show_tenant",
    "tenant_usage",
    "tenant_work",
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


@dataclass(frozen=True)
class TenantWork:
    """A tenant's unfinished samples: those waiting for budget, and those running or queued."""

    name: str
    waiting: int
    running: int

    @property
    def idle(self) -> bool:
        """True when none of its samples waits or runs: it can go without failing any."""
        return self.waiting == 0 and self.running == 0


def tenant_work(fleet: FleetClient, name: str) -> TenantWork:
    """What of tenant ``name``'s batches is unfinished now, from the batch records and its parked steps."""
    waiting = running = 0
    for status in fleet.batches.statuses(fleet.batches.running()):
        if status.tenant == name and not status.cancelled:
            waiting += status.waiting_for_budget
            running += status.unfinished - status.waiting_for_budget
    parked = DeferredSamples(fleet.redis, prefix=fleet.prefix).count(name)
    return TenantWork(name, max(waiting, parked), running)


def remove_tenant(
    fleet: FleetClient,
    principal: Principal,
    name: str,
    *,
    drain: bool = False,
    fail_waiting: Callable[[str], int] | None = None,
    progress: Callable[[TenantWork], None] | None = None,
    poll_seconds: float = 1.0,
) -> bool:
    """Remove tenant ``name``: its skillbooks go back to 'default'. False if none was stored.

    A sample sent as a tenant that is gone is refused for good, so while samples of ``name``
    wait for budget or run, the removal is refused (TenantBusyError) unless ``drain`` (look
    every ``poll_seconds`` until none, telling ``progress``) or ``fail_waiting`` (called with
    the name, it fails the waiting ones; then the running ones are waited for as ``drain`` does).
    """
    require_fleet_admin(principal, "remove a tenant")
    if name not in fleet.tenants.all():
        return False
    work = tenant_work(fleet, name)
    if not work.idle and not drain and fail_waiting is None:
        raise TenantBusyError(name, work.waiting, work.running)
    while not work.idle:
        if fail_waiting is not None and work.waiting:
            fail_waiting(name)  # a sample that starts waiting meanwhile is failed on the next look
            work = tenant_work(fleet, name)
            if work.idle:
                break
        if progress is not None:
            progress(work)
        time.sleep(poll_seconds)
        work = tenant_work(fleet, name)
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
