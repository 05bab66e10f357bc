"""Who may call the HTTP server: its bearer token, and when it may run without one.

A token comes from ``ACE_MCP_TOKEN`` or from a file (``--token-file``, which wins
so the token need not sit in the environment). Without one the server refuses to
start, unless the operator says ``--no-auth`` and the server listens on loopback
only: then only processes of this machine reach it, and the operator chose that.
"""

from __future__ import annotations

import ipaddress
from pathlib import Path

from .errors import HTTPAuthSettingError

__all__ = ["MIN_TOKEN_CHARS", "is_loopback", "http_token"]

# A guessable token is no token: 16 characters of token_urlsafe are 96 bits.
MIN_TOKEN_CHARS = 16


def is_loopback(host: str) -> bool:
    """True when ``host`` is ``localhost`` or a loopback address (127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def http_token(env_token: str | None, token_file: Path | None, *, no_auth: bool, host: str) -> str | None:
    """The token HTTP requests must carry; None only for ``--no-auth`` on a loopback host.

    Raises:
        HTTPAuthSettingError: no token where one is needed, an unreadable or short one,
            or ``--no-auth`` on a host other machines can reach.
    """
    if no_auth:
        if not is_loopback(host):
            raise HTTPAuthSettingError(
                f"--no-auth is allowed on a loopback host only, not --host {host}: "
                "set ACE_MCP_TOKEN or --token-file"
            )
        return None
    token = _read_token_file(token_file) if token_file is not None else env_token
    if not token:
        raise HTTPAuthSettingError(
            "the HTTP server needs a bearer token: set ACE_MCP_TOKEN or --token-file "
            "(or --no-auth on a loopback host)"
        )
    if len(token) < MIN_TOKEN_CHARS:
        source = f"--token-file {token_file}" if token_file is not None else "ACE_MCP_TOKEN"
        raise HTTPAuthSettingError(
            f"{source}: the token has {len(token)} characters, at least {MIN_TOKEN_CHARS} are needed "
            "(e.g. python -c 'import secrets; print(secrets.token_urlsafe())')"
        )
    return token


def _read_token_file(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise HTTPAuthSettingError(f"--token-file {path}: cannot read it ({exc})") from None
