"""Offline litellm for the provider tests: the real code path, answers from ``mock_response``."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from ace_workers.providers._lazy_imports import import_litellm

from .support import ScriptedCompletion


@pytest.fixture(scope="session", autouse=True)
def local_cost_map() -> Iterator[None]:
    """Keep litellm from fetching its cost map over the network when the tests first import it."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        yield


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail any test that tries to open a connection, instead of letting it reach a provider."""

    def refuse(self: socket.socket, address: Any) -> None:
        raise AssertionError(f"a provider test tried to connect to {address}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)


@pytest.fixture
def script(monkeypatch: pytest.MonkeyPatch) -> Callable[..., ScriptedCompletion]:
    """Install a ScriptedCompletion as ``litellm.completion`` for the test."""
    litellm = import_litellm()

    def install(*outcomes: Any) -> ScriptedCompletion:
        scripted = ScriptedCompletion(litellm.completion, outcomes)
        monkeypatch.setattr(litellm, "completion", scripted)
        return scripted

    return install
