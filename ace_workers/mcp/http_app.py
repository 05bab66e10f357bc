"""The HTTP app of the MCP server: API keys, Host/Origin check, bounded and expiring connections.

A request's bearer token is one of the fleet's API keys (``ace-workers key create``); the
key's principal (``operations.Principal``: ``key:<id>``, its tenant and role) rides on the
request's AccessToken (:class:`KeyAccessToken`) to the tools' handlers.

Built from the SDK's own parts (its session manager, transport security and
bearer-auth middleware) rather than ``Server.streamable_http_app``, which turns
the Host/Origin check on for 127.0.0.1 and localhost only and lets connections
live and grow without bound. Imported only when the server runs over HTTP.
"""

from __future__ import annotations

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

from ..distributed.tenancy.api_keys import ApiKeys
from ..distributed.tenancy.errors import InvalidApiKeyError
from ..operations import Principal, principal_for_key

__all__ = [
    "MCP_PATH",
    "ConnectionLimit",
    "KeyAccessToken",
    "KeyVerifier",
    "build_http_app",
    "transport_security",
]

logger = logging.getLogger(__name__)

MCP_PATH = "/mcp"
# JSON-RPC's range for server-defined errors; the same one the tools' errors use.
_TOO_MANY_CONNECTIONS = -32010
_LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
_WILDCARDS = ("0.0.0.0", "::")


class KeyAccessToken(AccessToken):
    """The SDK's AccessToken of an API key: ``principal`` is who calls (server._principal_of)."""

    principal: Principal


class KeyVerifier:
    """The SDK's TokenVerifier for the fleet's API keys: a key's principal, or None (401)."""

    def __init__(self, keys: ApiKeys) -> None:
        self._keys = keys

    async def verify_token(self, token: str) -> AccessToken | None:
        # One HGET in Redis: off the event loop, as every other Redis call of the server.
        try:
            principal = await anyio.to_thread.run_sync(principal_for_key, self._keys, token)
        except InvalidApiKeyError as exc:
            logger.info("MCP request refused: %s", exc)
            return None
        return KeyAccessToken(token="", client_id=principal.key_id, scopes=[], principal=principal)


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
    keys: ApiKeys | None,
    idle_seconds: float,
    max_connections: int,
) -> Starlette:
    """Streamable HTTP at ``/mcp``: a bearer token among ``keys`` (None: no auth), checked
    Host/Origin, bounded."""
    manager = StreamableHTTPSessionManager(
        app=server,
        security_settings=transport_security(host, port),
        session_idle_timeout=idle_seconds,
    )
    endpoint: ASGIApp = ConnectionLimit(StreamableHTTPASGIApp(manager), manager, max_connections)
    middleware: list[Middleware] = []
    if keys is not None:
        endpoint = RequireAuthMiddleware(endpoint, required_scopes=[])
        middleware = [
            Middleware(AuthenticationMiddleware, backend=BearerAuthBackend(KeyVerifier(keys))),
            Middleware(AuthContextMiddleware),
        ]
    return Starlette(
        routes=[Route(MCP_PATH, endpoint=endpoint)],
        middleware=middleware,
        lifespan=lambda app: manager.run(),
    )
