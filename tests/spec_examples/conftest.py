"""The spec's usage examples run as written (package name swapped), answered offline by litellm.

Every litellm call goes through the real litellm and instructor code path and is
answered from ``mock_response`` with :data:`REPLY`, one JSON object that holds
the fields of every role's output (pydantic ignores the others): the agent
answers "Paris", the Reflector states a lesson, the SkillManager adds it.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ace_workers.providers._lazy_imports import import_litellm

LESSON = "Answer with the name of the place only."

REPLY = json.dumps(
    {
        "reasoning": "The question asks for a place; I answer with its name.",
        "final_answer": "Paris",
        "error_identification": "none",
        "key_insight": LESSON,
        "extracted_learnings": [{"learning": LESSON}],
        "update": {
            "reasoning": "One reusable lesson.",
            "operations": [{"type": "ADD", "section": "answers", "content": LESSON}],
        },
    }
)


class ScriptedLiteLLM:
    """The real ``litellm.completion``, answering every call with REPLY; keeps each call's messages."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.prompts: list[str] = []

    def __call__(self, **kwargs: Any) -> Any:
        self.prompts.extend(str(message.get("content", "")) for message in kwargs.get("messages", []))
        return self.real(**kwargs, mock_response=REPLY)


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """No connection may be opened; litellm reads its cost map from disk."""
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")

    def refuse(self: socket.socket, address: Any) -> None:
        raise AssertionError(f"a spec example tried to connect to {address}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)


@pytest.fixture
def litellm_replies(monkeypatch: pytest.MonkeyPatch) -> ScriptedLiteLLM:
    """Install the scripted completion as ``litellm.completion``."""
    litellm = import_litellm()
    scripted = ScriptedLiteLLM(litellm.completion)
    monkeypatch.setattr(litellm, "completion", scripted)
    return scripted


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The examples save to relative paths: run them in a folder of their own."""
    monkeypatch.chdir(tmp_path)
    yield tmp_path
