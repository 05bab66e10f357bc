"""The spec's usage examples run as written (package name swapped), answered offline by litellm.

Every litellm call goes through the real litellm and instructor code path and is
answered from ``mock_response`` with ``SPEC_REPLY`` (tests/support/llms.py), one JSON
object that holds the fields of every role's output.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.llms import SPEC_REPLY, ScriptedCompletion, install_scripted_completion, refuse_connections


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """No connection may be opened; litellm reads its cost map from disk."""
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    refuse_connections(monkeypatch, "a spec example")


@pytest.fixture
def litellm_replies(monkeypatch: pytest.MonkeyPatch) -> ScriptedCompletion:
    """Install a completion answering every call with SPEC_REPLY as ``litellm.completion``."""
    return install_scripted_completion(monkeypatch, SPEC_REPLY)


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The examples save to relative paths: run them in a folder of their own."""
    monkeypatch.chdir(tmp_path)
    yield tmp_path
