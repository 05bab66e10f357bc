"""The first step of every operation on one skillbook: authorize the principal, then find the store.

Authorized before looking, so another tenant's skillbook is refused the same way whether it
exists or not; a missing one names only the skillbooks the principal may see.
"""

from __future__ import annotations

from ..distributed.store.errors import UnknownSkillbookError
from ..distributed.store.keys import validate_skillbook_name
from ..distributed.store.store import RedisSkillbookStore
from ..distributed.tenancy.api_keys import visible_skillbooks
from .fleet import FleetClient
from .principal import Principal, authorize

__all__ = ["READ", "REVIEW", "ADMIN", "authorized_store", "existing_store"]

# The roles the operations need (api_keys.ROLES, lowest first): reading; deciding proposals;
# changing a skillbook by hand (labels, pins, archives, rollback, the review policy).
READ, REVIEW, ADMIN = "read", "review", "admin"


def authorized_store(fleet: FleetClient, principal: Principal, role: str, name: str) -> RedisSkillbookStore:
    """The store of ``name`` (which may not exist yet), once ``principal`` may act on it as ``role``.

    Raises:
        InvalidSkillbookNameError: ``name`` cannot name a skillbook.
        ForeignSkillbookError: another tenant owns it. RoleTooLowError: the role is below ``role``.
    """
    validate_skillbook_name(name)
    authorize(principal, role, name, fleet.tenant_map())
    return fleet.store(name)


def existing_store(fleet: FleetClient, principal: Principal, role: str, name: str) -> RedisSkillbookStore:
    """:func:`authorized_store`, and UnknownSkillbookError (naming those the principal sees) if none."""
    store = authorized_store(fleet, principal, role, name)
    if not store.exists():
        seen = visible_skillbooks(principal.scope, fleet.skillbook_names(), fleet.tenant_map())
        raise UnknownSkillbookError(name, seen)
    return store
