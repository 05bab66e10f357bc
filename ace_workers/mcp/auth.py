"""Who may call the HTTP server: the fleet's API keys, and when it may run without one.

Over HTTP a request carries an API key (``ace-workers key create``) as its bearer token and
acts with the key's tenant and role; the keys live in the fleet's Redis, so the server needs
the fleet back end. Without keys it refuses to start, unless the operator says ``--no-auth``
and it listens on loopback only: then only processes of this machine reach it, and it acts as
the local operator (as over stdio, whose one peer started the process).
"""

from __future__ import annotations

import ipaddress

from .errors import HTTPAuthSettingError

__all__ = ["is_loopback", "check_http_access"]

# What to do for a server that would authenticate keys but has none to check.
CREATE_KEY = "ace-workers key create '*' --role admin --note mcp"


def is_loopback(host: str) -> bool:
    """True when ``host`` is ``localhost`` or a loopback address (127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_http_access(*, no_auth: bool, host: str, fleet: bool) -> None:
    """Refuse an HTTP server that could not authenticate its callers as asked.

    Raises:
        HTTPAuthSettingError: ``--no-auth`` on a host other machines can reach, or API keys
            asked for (no ``--no-auth``) on the local back end, which has no fleet to hold them.
    """
    if no_auth:
        if not is_loopback(host):
            raise HTTPAuthSettingError(
                f"--no-auth is allowed on a loopback host only, not --host {host}: without it "
                f"requests authenticate with an API key ({CREATE_KEY})"
            )
        return
    if not fleet:
        raise HTTPAuthSettingError(
            "over HTTP the server authenticates the fleet's API keys, and the local back end has no "
            "fleet: set ACE_REDIS_URL (the fleet back end) and create a key "
            f"({CREATE_KEY}), or pass --no-auth on a loopback host"
        )
