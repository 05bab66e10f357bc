"""API keys: made, listed and revoked by the operator or a fleet-wide admin key only."""

from __future__ import annotations

from ..distributed.tenancy.api_keys import ApiKey
from .access import require_fleet_admin
from .fleet import FleetClient
from .principal import Principal

__all__ = ["create_key", "list_keys", "revoke_key"]


def create_key(
    fleet: FleetClient, principal: Principal, tenant: str, role: str, *, note: str = ""
) -> tuple[ApiKey, str]:
    """A new key for ``tenant`` (``*``: fleet-wide) with ``role``, and its secret (shown once).

    Raises UnknownTenantError for a tenant never added.
    """
    require_fleet_admin(principal, "make an API key")
    return fleet.api_keys.create(tenant, role, note=note, actor=principal.name)


def list_keys(fleet: FleetClient, principal: Principal, tenant: str | None = None) -> list[ApiKey]:
    """Every key (or ``tenant``'s), oldest first; never their secrets."""
    require_fleet_admin(principal, "list the API keys")
    return fleet.api_keys.list(tenant)


def revoke_key(fleet: FleetClient, principal: Principal, key_id: str) -> bool:
    """Revoke key ``key_id``; False if there was none."""
    require_fleet_admin(principal, "revoke an API key")
    return fleet.api_keys.revoke(key_id)
