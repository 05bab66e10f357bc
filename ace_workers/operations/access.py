"""What a principal may see and do across the fleet: the checks every operation module shares.

A skillbook is authorized before it is looked up, so another tenant's skillbook is refused the
same way whether it exists or not, and a missing one names only the skillbooks the principal sees.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..distributed.store.errors import UnknownSkillbookError
from ..distributed.store.keys import validate_skillbook_name
from ..distributed.tenancy.api_keys import ROLES, visible_skillbooks
from .errors import FleetAdminRequiredError
from .fleet import FleetClient
from .principal import Principal, authorize

if TYPE_CHECKING:  # a type only: FleetClient.store imports the store when a command needs one
    from ..distributed.store.store import RedisSkillbookStore

__all__ = [
    "READ",
    "LEARN",
    "REVIEW",
    "ADMIN",
    "require_role",
    "require_fleet_admin",
    "visible_names",
    "authorized_store",
    "existing_store",
]

# The roles the operations need (api_keys.ROLES, lowest first): reading; sending work to learn;
# deciding proposals; changing a skillbook by hand (labels, pins, archives, rollback, the policy).
READ, LEARN, REVIEW, ADMIN = ROLES


def require_role(fleet: FleetClient, principal: Principal, needed: str, skillbook: str) -> str:
    """Check ``principal`` may act on ``skillbook`` with role ``needed``; return the owning tenant."""
    return authorize(principal, needed, skillbook, fleet.tenant_map())


def require_fleet_admin(principal: Principal, action: str) -> None:
    """FleetAdminRequiredError unless ``principal`` is the operator or a fleet-wide admin key.

    Tenants and keys are the fleet's configuration: a tenant's own admin may not change them.
    """
    if not (principal.fleet_wide and principal.role == ADMIN):
        raise FleetAdminRequiredError(principal.name, action)


def visible_names(fleet: FleetClient, principal: Principal) -> list[str]:
    """The skillbooks ``principal`` may see, sorted."""
    return visible_skillbooks(principal.scope, fleet.skillbook_names(), fleet.tenant_map())


def authorized_store(fleet: FleetClient, principal: Principal, role: str, name: str) -> RedisSkillbookStore:
    """The store of ``name`` (which may not exist yet), once ``principal`` may act on it as ``role``.

    Raises:
        InvalidSkillbookNameError: ``name`` cannot name a skillbook.
        ForeignSkillbookError: another tenant owns it. RoleTooLowError: the role is below ``role``.
    """
    validate_skillbook_name(name)
    require_role(fleet, principal, role, name)
    return fleet.store(name)


def existing_store(fleet: FleetClient, principal: Principal, role: str, name: str) -> RedisSkillbookStore:
    """:func:`authorized_store`, and UnknownSkillbookError (naming those the principal sees) if none."""
    store = authorized_store(fleet, principal, role, name)
    if not store.exists():
        raise UnknownSkillbookError(name, visible_names(fleet, principal))
    return store
