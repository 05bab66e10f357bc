"""Scoped API keys: a tenant and a role each, stored hashed in Redis, and the one check every surface uses.

A key's secret is ``ace_<id>_<token>``: the id is public (lists, logs, the change log's
``key:<id>``), the token is 256 random bits. Redis keeps only the SHA-256 of the whole
secret, so the secret is shown once, when the key is made, and a copy of Redis gives no
credential away. A fast hash is enough here, unlike for passwords: the secret is random,
not chosen by a person, so there is nothing to guess from a dictionary.

Roles are ordered, each including the ones before: ``read`` (ask, read, export) <
``learn`` (enqueue learning) < ``review`` (approve or reject proposals) < ``admin``
(labels, rollbacks, loads, anything administrative). A key of tenant ``*`` is a
fleet-wide operator key: every skillbook, whoever owns it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import secrets
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

import redis

from ...counts import noun_for
from ..store.errors import CorruptDataError
from ..store.keys import api_key_ids_key, api_keys_key
from ..store.replies import decode_text
from .errors import ForeignSkillbookError, InvalidApiKeyError, RoleTooLowError, TenancyError
from .roles import ALL_TENANTS, ROLES, role_at_least, validate_role
from .tenants import TenantMap, TenantRegistry, validate_tenant_name

__all__ = [
    "ALL_TENANTS",
    "OPERATOR",
    "ROLES",
    "ApiKey",
    "ApiKeys",
    "Scope",
    "authorize",
    "can_see",
    "key_id_of",
    "role_at_least",
    "validate_role",
    "visible_skillbooks",
]

logger = logging.getLogger(__name__)

SECRET_PREFIX = "ace_"
_SECRET = re.compile(r"ace_([0-9a-f]{8,32})_([A-Za-z0-9_-]{20,200})")
_NOTE_CHARS = 500


@dataclass(frozen=True)
class Scope:
    """What a caller may touch: tenant ``tenant``'s skillbooks (``*``: every one) up to ``role``.

    ``key_id`` names the credential in refusals and logs (``operator`` for the operator's own).
    """

    tenant: str
    role: str
    key_id: str

    @property
    def fleet_wide(self) -> bool:
        """True for an operator's scope: every tenant's skillbooks."""
        return self.tenant == ALL_TENANTS


# The scope of the local operator (stdio, --no-auth on loopback), who holds no key.
OPERATOR = Scope(ALL_TENANTS, "admin", "operator")


@dataclass(frozen=True)
class ApiKey:
    """One API key as stored: its public id, scope, a note, and when and by whom it was made."""

    id: str
    tenant: str
    role: str
    note: str = ""
    created_at: float = 0.0
    created_by: str = ""

    @property
    def scope(self) -> Scope:
        """What the key may touch."""
        return Scope(self.tenant, self.role, self.id)

    def to_dict(self) -> dict[str, Any]:
        """The record as stored and as ``key list --json`` prints it (never the secret)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: object) -> ApiKey:
        """The record ``to_dict`` wrote; ValueError naming what is wrong."""
        if not isinstance(data, dict):
            raise ValueError("a key record must be a JSON object")
        unknown = set(data) - {"id", "tenant", "role", "note", "created_at", "created_by"}
        if unknown:
            raise ValueError(f"unknown {noun_for(len(unknown), 'field')} {sorted(unknown)}")
        for name in ("id", "tenant", "role"):
            if not isinstance(data.get(name), str):
                raise ValueError(f"field {name!r} must be a string")
        if data["tenant"] != ALL_TENANTS:
            validate_tenant_name(data["tenant"])
        validate_role(data["role"])
        if not isinstance(data.get("created_at", 0.0), int | float):
            raise ValueError("field 'created_at' must be a number")
        return cls(
            id=data["id"],
            tenant=data["tenant"],
            role=data["role"],
            note=str(data.get("note", "")),
            created_at=float(data.get("created_at", 0.0)),
            created_by=str(data.get("created_by", "")),
        )


def key_id_of(secret: str) -> str | None:
    """The public id inside a secret of our format, or None if it is not one."""
    match = _SECRET.fullmatch(secret)
    return match.group(1) if match else None


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


class ApiKeys:
    """The API keys of one fleet (one key prefix) in Redis."""

    def __init__(self, client: redis.Redis, *, prefix: str = "ace") -> None:
        self.redis = client
        self.prefix = prefix
        self.key = api_keys_key(prefix)
        self.ids_key = api_key_ids_key(prefix)
        self.tenants = TenantRegistry(client, prefix=prefix)

    def create(self, tenant: str, role: str, *, note: str = "", actor: str = "") -> tuple[ApiKey, str]:
        """Make a key for ``tenant`` (``*``: fleet-wide) with ``role``; return it and its secret.

        The secret is returned here only: Redis keeps its SHA-256.

        Raises:
            UnknownTenantError: no tenant ``tenant`` (``default`` always exists).
            TenancyError: an unknown role, or a note too long.
        """
        validate_role(role)
        if tenant != ALL_TENANTS:
            self.tenants.get(tenant)  # UnknownTenantError, listing the tenants
        if len(note) > _NOTE_CHARS:
            raise TenancyError(f"note: {len(note)} characters, at most {_NOTE_CHARS}")
        record = ApiKey(
            id=secrets.token_hex(4),
            tenant=tenant,
            role=role,
            note=note,
            created_at=time.time(),
            created_by=actor,
        )
        secret = f"{SECRET_PREFIX}{record.id}_{secrets.token_urlsafe(32)}"
        digest = _digest(secret)
        # One slot ({apikeys}): the record and its id's entry are written together or not at all.
        with self.redis.pipeline(transaction=True) as pipe:
            pipe.hsetnx(self.ids_key, record.id, digest)
            pipe.hset(self.key, digest, json.dumps(record.to_dict(), sort_keys=True))
            fresh, _ = pipe.execute()
        if not fresh:  # 32 bits of id: a clash is rare, and then the other key's entry is kept
            self.redis.hdel(self.key, digest)
            return self.create(tenant, role, note=note, actor=actor)
        logger.info("API key %s made for tenant %s, role %s, by %s", record.id, tenant, role, actor or "?")
        return record, secret

    def revoke(self, key_id: str) -> bool:
        """Remove key ``key_id``: it authenticates nobody from now on. False if there was none."""
        digest = self.redis.hget(self.ids_key, key_id)
        if digest is None:
            return False
        with self.redis.pipeline(transaction=True) as pipe:
            pipe.hdel(self.key, decode_text(digest))
            pipe.hdel(self.ids_key, key_id)
            pipe.execute()
        logger.info("API key %s revoked", key_id)
        return True

    def list(self, tenant: str | None = None) -> list[ApiKey]:
        """Every key (or ``tenant``'s), oldest first; CorruptDataError naming a record that is not one."""
        keys = [self._parse(digest, raw) for digest, raw in self.redis.hgetall(self.key).items()]
        return sorted(
            (key for key in keys if tenant is None or key.tenant == tenant),
            key=lambda key: (key.created_at, key.id),
        )

    def authenticate(self, secret: str) -> ApiKey | None:
        """The key whose secret this is, or None (malformed, unknown, revoked, or its record corrupt)."""
        key_id = key_id_of(secret)
        if key_id is None:
            return None
        digest = _digest(secret)
        raw = self.redis.hget(self.key, digest)
        if raw is None:
            return None
        try:
            record = self._parse(digest, raw)
        except CorruptDataError as exc:
            # A record no one can read grants nothing; the operator learns why from the log.
            logger.error("API key %s refused: %s", key_id, exc)
            return None
        if record.id != key_id:  # a record moved under another secret's hash: not this key's
            logger.error("API key %s refused: its record names id %r", key_id, record.id)
            return None
        return record

    def require(self, secret: str) -> ApiKey:
        """The key whose secret this is; InvalidApiKeyError when it authenticates nobody."""
        record = self.authenticate(secret)
        if record is None:
            key_id = key_id_of(secret)
            problem = (
                "unknown or revoked (ace-workers key list shows the keys there are)"
                if key_id
                else "not a key of this fleet (expected ace_<id>_<secret>, as ace-workers key create prints)"
            )
            raise InvalidApiKeyError(key_id, problem)
        return record

    def _parse(self, digest: Any, raw: Any) -> ApiKey:
        field = decode_text(digest)
        try:
            return ApiKey.from_dict(json.loads(decode_text(raw)))
        except (ValueError, TypeError, TenancyError) as exc:  # not JSON, or not a key's record
            raise CorruptDataError(self.key, f"field {field[:12]}...: {exc}") from None


def authorize(scope: Scope, needed: str, skillbook: str, tenants: TenantMap) -> str:
    """Check ``scope`` may act on ``skillbook`` with role ``needed``; return the skillbook's owner.

    Raises:
        ForeignSkillbookError: another tenant owns the skillbook (surfaces answer as if it did not exist).
        RoleTooLowError: the key's tenant owns it, but its role is below ``needed``.
    """
    owner = tenants.tenant_of(skillbook)
    details = {
        "key_id": scope.key_id,
        "key_tenant": scope.tenant,
        "key_role": scope.role,
        "skillbook": skillbook,
        "owner": owner,
        "needed": needed,
    }
    if not scope.fleet_wide and owner != scope.tenant:
        raise ForeignSkillbookError(**details)
    if not role_at_least(scope.role, needed):
        raise RoleTooLowError(**details)
    return owner


def can_see(scope: Scope, skillbook: str, tenants: TenantMap) -> bool:
    """True when ``scope``'s tenant owns ``skillbook`` (or the scope is fleet-wide)."""
    return scope.fleet_wide or tenants.tenant_of(skillbook) == scope.tenant


def visible_skillbooks(scope: Scope, names: Iterable[str], tenants: TenantMap) -> list[str]:
    """The skillbooks among ``names`` that ``scope`` may see, in their order: lists show only these."""
    return [name for name in names if can_see(scope, name, tenants)]
