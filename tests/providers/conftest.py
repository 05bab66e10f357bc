"""Offline litellm for the provider tests: the real code path, answers from ``mock_response``."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.support.llms import ScriptedCompletion, install_scripted_completion, refuse_connections


@pytest.fixture(scope="session", autouse=True)
def local_cost_map() -> Iterator[None]:
    """Keep litellm from fetching its cost map over the network when the tests first import it."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        yield


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail any test that tries to open a connection, instead of letting it reach a provider."""
    refuse_connections(monkeypatch, "a provider test")


@pytest.fixture
def script(monkeypatch: pytest.MonkeyPatch) -> Callable[..., ScriptedCompletion]:
    """Install a ScriptedCompletion as ``litellm.completion`` for the test."""

    def install(*outcomes: Any) -> ScriptedCompletion:
        return install_scripted_completion(monkeypatch, *outcomes)

    return install
