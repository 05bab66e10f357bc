"""Who may use the console: the fleet's API keys, and when it may run without one.

A key (``ace-workers key create``) comes as a bearer token (scripts: ``Authorization:
Bearer KEY``) or as the password of basic auth (people: the browser asks, the user name is
free, a person's own name or the key's id). Either way the caller is the key's principal,
``key:<id>`` with the key's tenant and role, authenticated by
:func:`~ace_workers.operations.principal_for_key` as MCP and the CLI's ``--api-key`` are.
Without keys the console refuses to start, unless the operator says ``--no-auth`` and it
listens on loopback only: then it acts as ``local``, a fleet operator.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from ..distributed.tenancy.api_keys import ApiKeys
from ..distributed.tenancy.errors import InvalidApiKeyError
from ..mcp.auth import is_loopback
from ..operations import Principal as OperationsPrincipal
from ..operations import operator, principal_for_key
from .errors import ConsoleSettingError

__all__ = ["CREATE_KEY", "LOCAL_USER", "ConsoleAccess", "Principal"]

# Who acts when the console runs --no-auth on loopback: whoever sits at this machine.
LOCAL_USER = "local"
# How an operator makes the first key: fleet-wide, every role.
CREATE_KEY = "ace-workers key create '*' --role admin --note ops"


@dataclass(frozen=True)
class Principal(OperationsPrincipal):
    """The operations' principal, and how it proved who it is: "basic", "bearer" or "none"."""

    method: str = "bearer"

    @property
    def ambient(self) -> bool:
        """True when the browser sends the credential by itself (basic auth, none): CSRF applies."""
        return self.method != "bearer"

    @classmethod
    def of(cls, principal: OperationsPrincipal, method: str) -> Principal:
        """``principal`` as it came to the console, by ``method``."""
        values = {spec.name: getattr(principal, spec.name) for spec in fields(OperationsPrincipal)}
        return cls(**values, method=method)


@dataclass(frozen=True)
class ConsoleAccess:
    """The console's credentials: the fleet's API keys, or none at all (``no_auth``: ``local``)."""

    no_auth: bool = False
    # The fleet's API keys (build_console_app sets them from the service's Redis).
    api_keys: ApiKeys | None = field(default=None, repr=False, compare=False)

    @classmethod
    def from_settings(cls, *, no_auth: bool, host: str) -> ConsoleAccess:
        """The access the console starts with; ConsoleSettingError for ``--no-auth`` off loopback."""
        if no_auth and not is_loopback(host):
            raise ConsoleSettingError(
                f"--no-auth is allowed on a loopback host only, not --host {host}: without it people "
                f"and scripts sign in with an API key ({CREATE_KEY})"
            )
        return cls(no_auth=no_auth)

    def local(self) -> Principal:
        """The principal of every request on a ``--no-auth`` console: the operator at this machine."""
        return Principal.of(operator(LOCAL_USER), "none")

    def check_key(self, secret: str, method: str) -> Principal | None:
        """The principal of the API key ``secret`` (one HGET in Redis), or None for no live key."""
        if self.api_keys is None:
            return None
        try:
            return Principal.of(principal_for_key(self.api_keys, secret), method)
        except InvalidApiKeyError:
            return None
