"""The fixtures of the Opik tests: the real SDK pointed at the stub Opik server, a network guard.

The real opik SDK runs unchanged; only its URL is ours (see tests/support/opik.py, whose
``opik_stub`` fixture every test has, for what the stub records and answers).
"""

from __future__ import annotations

import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.opik import NetworkGuard, OpikStub

# Every OPIK_* variable the tests rely on being unset (a developer's shell may set them).
_UNSET = ("OPIK_DISABLED", "OPIK_PROJECT_NAME", "OPIK_TRACK_DISABLE", "OPIK_URL_OVERRIDE", "OPIK_API_KEY")


@pytest.fixture
def network_guard(monkeypatch: pytest.MonkeyPatch) -> NetworkGuard:
    """Record every outgoing connection and DNS lookup; refuse any that leaves 127.0.0.1."""
    guard = NetworkGuard()
    connect = socket.socket.connect
    getaddrinfo = socket.getaddrinfo

    def guarded_connect(sock: socket.socket, address: Any) -> None:
        if isinstance(address, tuple):
            guard.connections.append((str(address[0]), int(address[1])))
            if address[0] != "127.0.0.1":
                raise ConnectionRefusedError(f"test network guard: no connection to {address!r}")
        connect(sock, address)

    def guarded_getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else str(host)
        if name not in ("127.0.0.1", "localhost"):
            guard.lookups.append(name)
            raise socket.gaierror(f"test network guard: no lookup of {name!r}")
        return getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", guarded_connect)
    monkeypatch.setattr(socket, "getaddrinfo", guarded_getaddrinfo)
    return guard


@pytest.fixture
def opik_env(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, opik_stub: OpikStub, network_guard: NetworkGuard
) -> Iterator[OpikStub]:
    """The real opik SDK pointed at the stub, with its error reports and usage analytics off.

    Also isolates what the SDK and LiteLLM keep per process: opik's global
    client, its shared connection bundles, litellm's callback lists and the
    "logged once" reasons of ace_workers' Opik helpers.
    """
    for name in _UNSET:
        monkeypatch.delenv(name, raising=False)
    config = tmp_path / "opik.config"
    config.write_text("")
    settings = {
        "OPIK_URL_OVERRIDE": opik_stub.url,
        "OPIK_WORKSPACE": "test-workspace",
        "OPIK_API_KEY": "test-key",
        "OPIK_CONFIG_PATH": str(config),  # never the developer's ~/.opik.config
        "OPIK_SENTRY_ENABLE": "false",  # no error reports to Sentry
        "OPIK_ANALYTICS_ENABLE": "false",  # no usage analytics to Comet
        "OPIK_ANALYTICS_URL": "",
        # Plain http to the stub; and with SSL_CERT_FILE set the SDK would hand httpx
        # verify=<str>, which httpx deprecates (a DeprecationWarning, an error here).
        "OPIK_CHECK_TLS_CERTIFICATE": "false",
        "OPIK_DEFAULT_FLUSH_TIMEOUT": "10",  # a flush can never hang a test
        "OPIK_CONSOLE_LOGGING_LEVEL": "WARNING",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    for name, value in settings.items():
        monkeypatch.setenv(name, value)
    from ace_workers.observability import opik as opik_helpers

    monkeypatch.setattr(opik_helpers, "_logged_reasons", set())
    _isolate_litellm_callbacks(monkeypatch)
    yield opik_stub
    _close_opik_clients()


def _isolate_litellm_callbacks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Give litellm fresh callback lists, restored after the test (it copies callbacks into all of them)."""
    import litellm

    for name in (
        "callbacks",
        "success_callback",
        "_async_success_callback",
        "failure_callback",
        "_async_failure_callback",
        "input_callback",
    ):
        monkeypatch.setattr(litellm, name, list(getattr(litellm, name)))


def _close_opik_clients() -> None:
    """End the SDK's global client and every connection bundle (their threads would outlive the stub)."""
    if not isinstance(sys.modules.get("opik"), type(sys)):
        return
    from opik.api_objects import connection_resources, opik_client

    opik_client.reset_global_client(end_client=False)
    # flush=True joins the SDK's threads (its connection monitor too) while the stub still answers.
    connection_resources.MANAGER.close_all(flush=True)
