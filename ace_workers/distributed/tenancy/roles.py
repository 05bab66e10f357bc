"""What an API key may do: its role (read < learn < review < admin), and the tenant of a fleet-wide key.

Kept apart from the key store (api_keys.py) so that what names a role, such as a command's
``--role`` help, does not load the Redis client.
"""

from __future__ import annotations

from .errors import TenancyError

__all__ = ["ALL_TENANTS", "ROLES", "role_at_least", "validate_role"]

# The tenant of a fleet-wide key: every skillbook, whoever owns it.
ALL_TENANTS = "*"
# In order: each role may do what the roles before it may.
ROLES = ("read", "learn", "review", "admin")


def validate_role(role: object) -> str:
    """Return ``role`` if it is one of ROLES, else TenancyError listing them."""
    if role not in ROLES:
        raise TenancyError(f"role {role!r}: use one of {', '.join(ROLES)} (each includes the ones before)")
    assert isinstance(role, str)
    return role


def role_at_least(role: str, needed: str) -> bool:
    """True when ``role`` includes ``needed`` (an unknown role includes nothing)."""
    return role in ROLES and ROLES.index(role) >= ROLES.index(validate_role(needed))
