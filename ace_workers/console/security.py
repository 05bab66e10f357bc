"""The console's gate: Host check, authentication, and the headers every answer carries.

A pure ASGI middleware, so nothing of the app runs for a request it refuses.
CSRF and read-only are checked where state changes, by ``views.action``,
which reads the form the token comes in.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from urllib.parse import urlsplit

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..mcp.auth import is_loopback
from .access import CREATE_KEY, ConsoleAccess, Principal

__all__ = ["ConsoleGate", "csrf_token", "OPEN_PATHS", "SECURITY_HEADERS"]

# Probes and the stylesheet and script need no credentials: they show nothing of the fleet.
OPEN_PATHS = ("/healthz", "/static/")
REALM = 'Basic realm="ace-workers console", charset="UTF-8"'
# No inline script, no other origin, no framing: injected markup could neither run nor phone home.
SECURITY_HEADERS = {
    "content-security-policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "frame-ancestors 'none'; form-action 'self'; base-uri 'none'"
    ),
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "same-origin",
    "cache-control": "no-store",
}


def csrf_token(secret: bytes, principal: Principal) -> str:
    """The token a form of ``principal`` carries: an HMAC of their name under the process's secret."""
    return hmac.new(secret, f"csrf:{principal.name}".encode(), hashlib.sha256).hexdigest()


class ConsoleGate:
    """Refuses requests with a foreign Host (on loopback) or without valid credentials.

    On a loopback bind the Host header must name loopback too: a web page
    whose name was re-pointed at 127.0.0.1 (DNS rebinding) is refused
    before its request reaches a handler. The principal lands in
    ``scope["state"]["principal"]``.
    """

    def __init__(
        self, app: ASGIApp, access: ConsoleAccess, *, host: str, json_paths: tuple[str, ...] = ("/api/",)
    ) -> None:
        self.app = app
        self.access = access
        self.loopback_only = is_loopback(host)
        # Paths whose refusals are JSON for programs (the console's API; intake's every path).
        self.json_paths = json_paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        refusal = await self._refusal(scope, headers)
        if refusal is not None:
            await _with_headers(refusal)(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                raw = list(message.get("headers", []))
                present = {name.lower() for name, _ in raw}
                raw += [
                    (k.encode(), v.encode()) for k, v in SECURITY_HEADERS.items() if k.encode() not in present
                ]
                message = {**message, "headers": raw}
            await send(message)

        await self.app(scope, receive, send_with_headers)

    async def _refusal(self, scope: Scope, headers: Headers) -> Response | None:
        host = urlsplit(f"//{headers.get('host', '')}").hostname or ""
        if self.loopback_only and not is_loopback(host):
            return PlainTextResponse(f"the console answers loopback names only, not Host {host!r}", 421)
        path: str = scope["path"]
        if path.startswith(OPEN_PATHS):
            return None
        principal = await self._principal(headers)
        if principal is None:
            return _unauthorized(path.startswith(self.json_paths))
        scope.setdefault("state", {})["principal"] = principal
        return None

    async def _principal(self, headers: Headers) -> Principal | None:
        if self.access.no_auth:
            return self.access.local()
        scheme, _, credential = headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer" and credential:
            secret, method = credential.strip(), "bearer"
        elif scheme.lower() == "basic" and credential:
            # A person signs in with a key as the password; the user name is theirs to choose.
            try:
                _user, _, secret = base64.b64decode(credential.strip(), validate=True).decode().partition(":")
            except (binascii.Error, UnicodeDecodeError):
                return None
            method = "basic"
        else:
            return None
        # An API key is looked up in Redis: off the event loop.
        return await run_in_threadpool(self.access.check_key, secret, method)


def _unauthorized(as_json: bool) -> Response:
    message = (
        "authentication required: an API key, as a bearer token or as the password of basic auth "
        f"(an operator makes one: {CREATE_KEY})"
    )
    headers = {"www-authenticate": REALM}
    if as_json:
        return JSONResponse({"error": "unauthorized", "message": message}, 401, headers=headers)
    return PlainTextResponse(message, 401, headers=headers)


def _with_headers(response: Response) -> Response:
    for name, value in SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)
    return response
