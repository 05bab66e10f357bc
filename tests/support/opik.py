"""The stand-in Opik server the tests point the SDK at, and the record of where sockets went.

A pytest plugin (listed in tests/conftest.py): its ``opik_stub`` fixture serves every folder.

The stub records every request (method, path, decoded JSON body; the SDK
gzips its bodies) and answers what the Opik backend answers to what the SDK
calls: ``GET /is-alive/ping`` (its connection monitor) and the
``POST /v1/private/{traces,spans}/batch`` ingestion endpoints (204).
"""

from __future__ import annotations

import gzip
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


@dataclass(frozen=True)
class Request:
    """One request the stub received."""

    method: str
    path: str
    body: Any


@dataclass
class OpikStub:
    """The stub server's address and what it received."""

    url: str
    port: int
    requests: list[Request] = field(default_factory=list)

    def traces(self) -> list[dict[str, Any]]:
        """Every trace created, from batch and single create calls, in arrival order."""
        return self._created("traces")

    def spans(self) -> list[dict[str, Any]]:
        """Every span created, from batch and single create calls, in arrival order."""
        return self._created("spans")

    def _created(self, kind: str) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        for request in list(self.requests):
            if request.method != "POST":
                continue
            if request.path == f"/v1/private/{kind}/batch":
                found.extend(request.body[kind])
            elif request.path == f"/v1/private/{kind}":
                found.append(request.body)
        return found


class OpikStubHandler(BaseHTTPRequestHandler):
    """Records each request on ``stub`` and answers as the Opik backend would."""

    stub: OpikStub  # set on the subclass each server gets

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.headers.get("Content-Encoding") == "gzip":
            raw = gzip.decompress(raw)
        body = json.loads(raw) if raw else None
        self.stub.requests.append(Request(self.command, self.path, body))
        if self.command == "POST" and self.path.endswith("/batch"):
            self.send_response(204)  # what the Opik backend answers to a batch create
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        payload = b"{}"
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _answer

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep the test output clean


@dataclass
class NetworkGuard:
    """Every address a socket tried to connect to or resolve while the guard was on."""

    connections: list[tuple[str, int]] = field(default_factory=list)
    lookups: list[str] = field(default_factory=list)

    def outside_loopback(self) -> list[str]:
        """What went (or tried to go) anywhere but 127.0.0.1."""
        hosts = [host for host, _ in self.connections] + self.lookups
        return [host for host in hosts if host not in ("127.0.0.1", "localhost")]


@pytest.fixture
def opik_stub() -> Iterator[OpikStub]:
    """A running stub Opik server on 127.0.0.1 (a free port)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), OpikStubHandler)
    port = server.server_address[1]
    stub = OpikStub(url=f"http://127.0.0.1:{port}/", port=port)
    server.RequestHandlerClass = type("Handler", (OpikStubHandler,), {"stub": stub})
    # A short poll interval: shutdown() waits up to one interval.
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield stub
    server.shutdown()
    server.server_close()
    thread.join(5)
