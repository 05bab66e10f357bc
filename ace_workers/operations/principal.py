"""Who asks an operation of the fleet: the operator, or an API key with its tenant and role.

Every front end (the CLI, the console, MCP, intake) turns its caller into a :class:`Principal`
and passes it to the operation; the operation decides, once, what that principal may do
(:func:`authorize`). The CLI acts as the operator when it holds the Redis URL, or as a key
with ``--api-key``/``ACE_API_KEY``. API keys are the one credential: the console (bearer token
or basic auth's password), MCP over HTTP and ``--api-key`` each authenticate a secret with
:func:`principal_for_key`, the one place a secret becomes a principal.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..distributed.tenancy.api_keys import ALL_TENANTS, ApiKeys, Scope
from ..distributed.tenancy.api_keys import authorize as authorize_scope
from ..distributed.tenancy.tenants import TenantMap

__all__ = ["Principal", "operator", "principal_for_key", "authorize"]


@dataclass(frozen=True)
class Principal:
    """An authenticated caller: the name the change log records, its tenant (``*``: every tenant,
    the operator) and role, and the API key it came with (``""`` for the operator's own credentials)."""

    name: str
    tenant: str = ALL_TENANTS
    role: str = "admin"
    key_id: str = ""

    @property
    def scope(self) -> Scope:
        """What this caller may touch, as the tenancy layer checks it."""
        return Scope(self.tenant, self.role, self.key_id or self.name)

    @property
    def fleet_wide(self) -> bool:
        """True for the operator (and fleet-wide keys): every tenant's skillbooks."""
        return self.tenant == ALL_TENANTS


def operator(name: str) -> Principal:
    """The operator acting as ``name`` (``user:<login>``, a console user, ``local``)."""
    return Principal(name)


def principal_for_key(keys: ApiKeys, secret: str) -> Principal:
    """The principal of the API key ``secret`` (``key:<id>``, the key's tenant and role).

    Raises:
        InvalidApiKeyError: no live key has this secret (malformed, unknown or revoked).
    """
    key = keys.require(secret)
    return Principal(f"key:{key.id}", key.tenant, key.role, key.id)


def authorize(principal: Principal, needed: str, skillbook: str, tenants: TenantMap) -> str:
    """Check ``principal`` may act on ``skillbook`` with role ``needed``; return the skillbook's owner.

    Raises:
        ForeignSkillbookError: another tenant owns it (answered as if it did not exist).
        RoleTooLowError: the principal's tenant owns it, but its role is below ``needed``.
    """
    return authorize_scope(principal.scope, needed, skillbook, tenants)
