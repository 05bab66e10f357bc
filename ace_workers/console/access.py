"""Who may use the console: basic-auth users and bearer tokens, and when it may run without either.

Credentials come as ``name:secret`` lists, comma-separated, the format of
Flower's ``--basic-auth``: ``ACE_CONSOLE_BASIC_AUTH`` for people (a browser asks
for them) and ``ACE_CONSOLE_TOKENS`` for scripts (``Authorization: Bearer``).
The name is who the change log and the audit log say acted. Without
credentials the console refuses to start, unless the operator says
``--no-auth`` and it listens on loopback only: then it acts as ``local``.
All of these are fleet operators (tenant ``*``, role admin).

Scoped API keys (``ace-workers key create``) are bearer tokens too: a key's
principal is ``key:<id>`` with the key's tenant and role, and sees only its
tenant's skillbooks (the views check it, with the same ``authorize`` as MCP).
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass, field

from ..distributed.tenancy.api_keys import ALL_TENANTS, SECRET_PREFIX, ApiKeys, Scope
from ..mcp.auth import MIN_TOKEN_CHARS, is_loopback
from .errors import ConsoleSettingError

__all__ = ["LOCAL_USER", "ConsoleAccess", "Principal", "parse_credentials"]

# Who acts when the console runs --no-auth on loopback: whoever sits at this machine.
LOCAL_USER = "local"


@dataclass(frozen=True)
class Principal:
    """An authenticated caller: their name, how they proved it ("basic", "bearer" or "none"), and
    their tenant (``*``: a fleet operator) and role; ``key_id`` names the API key they came with."""

    name: str
    method: str
    tenant: str = ALL_TENANTS
    role: str = "admin"
    key_id: str = ""

    @property
    def scope(self) -> Scope:
        """What this caller may touch, for :func:`~ace_workers.distributed.tenancy.authorize`."""
        return Scope(self.tenant, self.role, self.key_id or self.name)

    @property
    def ambient(self) -> bool:
        """True when the browser sends the credential by itself (basic auth, none): CSRF applies."""
        return self.method != "bearer"


@dataclass(frozen=True)
class ConsoleAccess:
    """The console's credentials; an empty access (``no_auth``) lets every request in as ``local``."""

    users: dict[str, str] = field(default_factory=dict, repr=False)
    tokens: dict[str, str] = field(default_factory=dict, repr=False)
    no_auth: bool = False
    # The fleet's scoped API keys (build_console_app sets them from the service's Redis).
    api_keys: ApiKeys | None = field(default=None, repr=False, compare=False)

    @classmethod
    def from_settings(
        cls, basic_auth: str | None, tokens: str | None, *, no_auth: bool, host: str
    ) -> ConsoleAccess:
        """The access the console starts with; ConsoleSettingError where it must not start.

        Args:
            basic_auth: ``user:password,...`` (ACE_CONSOLE_BASIC_AUTH or --basic-auth).
            tokens: ``name:token,...`` (ACE_CONSOLE_TOKENS), each token at least 16 characters.
            no_auth: the operator's explicit ``--no-auth``; refused off loopback.
            host: the address the console binds.
        """
        if no_auth:
            if not is_loopback(host):
                raise ConsoleSettingError(
                    f"--no-auth is allowed on a loopback host only, not --host {host}: "
                    "set ACE_CONSOLE_BASIC_AUTH or ACE_CONSOLE_TOKENS"
                )
            return cls(no_auth=True)
        users = parse_credentials(basic_auth, "ACE_CONSOLE_BASIC_AUTH") if basic_auth else {}
        named_tokens = parse_credentials(tokens, "ACE_CONSOLE_TOKENS") if tokens else {}
        for name, token in named_tokens.items():
            if len(token) < MIN_TOKEN_CHARS:
                raise ConsoleSettingError(
                    f"ACE_CONSOLE_TOKENS: {name!r} has a token of {len(token)} characters, at least "
                    f"{MIN_TOKEN_CHARS} are needed "
                    "(make one: python -c 'import secrets; print(secrets.token_urlsafe())')"
                )
        if not users and not named_tokens:
            raise ConsoleSettingError(
                "the console needs credentials: set ACE_CONSOLE_BASIC_AUTH (user:password,...) or "
                "ACE_CONSOLE_TOKENS (name:token,...), or pass --basic-auth (or --no-auth on a loopback host)"
            )
        return cls(users=users, tokens=named_tokens)

    def check_basic(self, user: str, password: str) -> Principal | None:
        """The principal for a basic-auth pair, or None; compared in constant time."""
        expected = self.users.get(user)
        # Compare against something even for an unknown user, so timing does not tell users apart.
        matches = hmac.compare_digest(password.encode(), (expected or "\0" * len(password)).encode())
        return Principal(user, "basic") if expected is not None and matches else None

    def check_bearer(self, token: str) -> Principal | None:
        """The principal whose token this is, or None; every token is compared, in constant time.

        A token of ACE_CONSOLE_TOKENS is a fleet operator; else a scoped API key is looked up
        (by the SHA-256 of the secret, one HGET) and its principal has the key's tenant and role.
        """
        found = None
        for name, expected in self.tokens.items():
            if hmac.compare_digest(token.encode(), expected.encode()):
                found = Principal(name, "bearer")
        if found is None and self.api_keys is not None and token.startswith(SECRET_PREFIX):
            key = self.api_keys.authenticate(token)
            if key is not None:
                found = Principal(f"key:{key.id}", "bearer", key.tenant, key.role, key.id)
        return found


def parse_credentials(value: str, source: str) -> dict[str, str]:
    """``name:secret,...`` as a dict; ConsoleSettingError naming ``source`` (never a secret) if malformed."""
    found: dict[str, str] = {}
    for pair in value.split(","):
        name, colon, secret = pair.partition(":")
        if not (name.strip() and colon and secret):
            raise ConsoleSettingError(
                f'{source}: expected "name:secret" (several separated by commas), each with a name and secret'
            )
        if name.strip() in found:
            raise ConsoleSettingError(f"{source}: the name {name.strip()!r} is given twice")
        found[name.strip()] = secret
    return found
