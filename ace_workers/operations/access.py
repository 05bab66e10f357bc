"""What a principal may see and do across the fleet: the checks every operation module shares."""

from __future__ import annotations

from ..distributed.tenancy.api_keys import ROLES, visible_skillbooks
from .errors import FleetAdminRequiredError
from .fleet import FleetClient
from .principal import Principal, authorize

__all__ = ["require_fleet_admin", "require_role", "visible_names"]


def require_role(fleet: FleetClient, principal: Principal, needed: str, skillbook: str) -> str:
    """Check ``principal`` may act on ``skillbook`` with role ``needed``; return the owning tenant."""
    return authorize(principal, needed, skillbook, fleet.tenant_map())


def require_fleet_admin(principal: Principal, action: str) -> None:
    """FleetAdminRequiredError unless ``principal`` is the operator or a fleet-wide admin key.

    Tenants and keys are the fleet's configuration: a tenant's own admin may not change them.
    """
    if not (principal.fleet_wide and principal.role == ROLES[-1]):
        raise FleetAdminRequiredError(principal.name, action)


def visible_names(fleet: FleetClient, principal: Principal) -> list[str]:
    """The skillbooks ``principal`` may see, sorted."""
    return visible_skillbooks(principal.scope, fleet.skillbook_names(), fleet.tenant_map())
