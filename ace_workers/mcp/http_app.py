"""The HTTP app of the MCP server: bearer token, Host/Origin check, bounded and expiring connections.

A request's bearer is the server's own token (ACE_MCP_TOKEN: the operator, a fleet-wide
admin) or, on the fleet, a scoped API key (``ace-workers key create``), whose scope rides
on the request's AccessToken (:class:`ScopedAccessToken`) to the tools' handlers.

Built from the SDK's own parts (its session manager, transport security and
bearer-auth middleware) rather than ``Server.streamable_http_app``, which turns
the Host/Origin check on for 127.0.0.1 and localhost only and lets connections
live and grow without bound. Imported only when the server runs over HTTP.
"""

from __future__ import annotations

import hmac
import logging
import socket
from typing import Any

import anyio
from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from mcp.server.auth.middleware.bearer_auth import BearerAuthBackend, RequireAuthMiddleware
from mcp.server.auth.provider import AccessToken
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from ..distributed.tenancy.api_keys import SECRET_PREFIX, ApiKeys
from ..distributed.tenancy.api_keys import Scope as KeyScope

__all__ = [
    "MCP_PATH",
    "ConnectionLimit",
    "KeyVerifier",
    "ScopedAccessToken",
    "StaticTokenVerifier",
    "build_http_app",
    "transport_security",
]

logger = logging.getLogger(__name__)

MCP_PATH = "/mcp"
# JSON-RPC's range for server-defined errors; the same one the tools' errors use.
_TOO_MANY_CONNECTIONS = -32010
_LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
_WILDCARDS = ("0.0.0.0", "::")


class StaticTokenVerifier:
    """The SDK's TokenVerifier for one shared secret, compared in constant time."""

    def __init__(self, token: str) -> None:
        self._token = token.encode()

    async def verify_token(self, token: str) -> AccessToken | None:
        # compare_digest: how long the comparison takes says nothing about the token.
        if not hmac.compare_digest(token.encode(), self._token):
            return None
        return AccessToken(token="", client_id="ace-mcp-client", scopes=[])


class ScopedAccessToken(AccessToken):
    """An AccessToken of a scoped API key: ``ace_scope`` is what the key may touch (server._scope_of)."""

    ace_scope: KeyScope


class KeyVerifier(StaticTokenVerifier):
    """The server's own token (fleet-wide) or, when ``keys`` is given, a scoped API key of the fleet."""

    def __init__(self, token: str, keys: ApiKeys | None) -> None:
        super().__init__(token)
        self._keys = keys

    async def verify_token(self, token: str) -> AccessToken | None:
        operator = await super().verify_token(token)
        if operator is not None or self._keys is None or not token.startswith(SECRET_PREFIX):
            return operator
        keys = self._keys
        # One HGET in Redis: off the event loop, as every other Redis call of the server.
        record = await anyio.to_thread.run_sync(keys.authenticate, token)
        if record is None:
            logger.info("MCP request refused: an unknown or revoked API key")
            return None
        return ScopedAccessToken(token="", client_id=record.id, scopes=[], ace_scope=record.scope)


def transport_security(host: str, port: int) -> TransportSecuritySettings:
    """The Host and Origin values a request may carry: the names of the address bound, with its port."""
    names = {host}
    if host in _LOOPBACK_NAMES:
        names |= set(_LOOPBACK_NAMES)
    if host in _WILDCARDS:
        # A wildcard address is reached by whatever name the machine has, and by loopback.
        names = {*_LOOPBACK_NAMES, socket.gethostname(), socket.getfqdn()}
    authorities = sorted(f"[{name}]:{port}" if ":" in name else f"{name}:{port}" for name in names)
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=authorities,
        allowed_origins=[f"http://{authority}" for authority in authorities],
    )


class ConnectionLimit:
    """Refuses a new HTTP connection (a request with no session id) while ``limit`` are open."""

    def __init__(self, app: ASGIApp, manager: StreamableHTTPSessionManager, limit: int) -> None:
        self.app = app
        self.manager = manager
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and MCP_SESSION_ID_HEADER not in Headers(scope=scope):
            # The SDK keeps its open connections here and offers no count of them.
            open_connections = len(self.manager._server_instances)
            if open_connections >= self.limit:
                message = (
                    f"the server has {open_connections} open connections, at most {self.limit} "
                    "(ACE_MCP_MAX_CONNECTIONS): close one, or wait until an idle one expires"
                )
                error = {"code": _TOO_MANY_CONNECTIONS, "message": message}
                response = JSONResponse({"jsonrpc": "2.0", "id": None, "error": error}, status_code=503)
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def build_http_app(
    server: Any,
    *,
    host: str,
    port: int,
    token: str | None,
    idle_seconds: float,
    max_connections: int,
    keys: ApiKeys | None = None,
) -> Starlette:
    """Streamable HTTP at ``/mcp``: the bearer ``token`` (None: no auth) or one of ``keys``, checked
    Host/Origin, bounded."""
    manager = StreamableHTTPSessionManager(
        app=server,
        security_settings=transport_security(host, port),
        session_idle_timeout=idle_seconds,
    )
    endpoint: ASGIApp = ConnectionLimit(StreamableHTTPASGIApp(manager), manager, max_connections)
    middleware: list[Middleware] = []
    if token is not None:
        endpoint = RequireAuthMiddleware(endpoint, required_scopes=[])
        middleware = [
            Middleware(AuthenticationMiddleware, backend=BearerAuthBackend(KeyVerifier(token, keys))),
            Middleware(AuthContextMiddleware),
        ]
    return Starlette(
        routes=[Route(MCP_PATH, endpoint=endpoint)],
        middleware=middleware,
        lifespan=lambda app: manager.run(),
    )
