"""The scripted fake LLMs of the tests, each a different kind of stand-in.

- :class:`ScriptedCompletion` replaces ``litellm.completion`` itself: the real litellm (and
  instructor) code path runs, answered from litellm's ``mock_response``. The provider tests
  script outcomes per call; the spec examples answer every call with :data:`SPEC_REPLY`.
- :class:`RecordingLLM` is an ``LLMClient`` for the role tests: one structured reply per
  response model, returned for every call.
- :class:`ScriptedStructuredLLM` is an ``LLMClient`` answering structured calls from a queue
  (replies or exceptions), for a caller that asks one model several times.
- :class:`ScriptedTextLLM` is an ``LLMClient`` answering free-text calls from a queue, for the
  Recursive Reflector.

Each returns real pydantic objects (or litellm's real completion objects), never dicts.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pytest
from pydantic import BaseModel

from ace_workers.providers import LLMResponse
from ace_workers.providers._lazy_imports import import_litellm

ModelT = TypeVar("ModelT", bound=BaseModel)

# -- litellm, answered offline ----------------------------------------------------------------------

MODEL = "openai/gpt-4o-mini"
FALLBACK = "openai/gpt-4o"
# litellm's mock responses always report this usage.
MOCK_USAGE = {"prompt_tokens": 10, "completion_tokens": 20, "total_tokens": 30}

# The spec examples' lesson, and the one reply that holds the fields of every role's output
# (pydantic ignores the others): the agent answers "Paris", the Reflector states the lesson,
# the SkillManager adds it.
SPEC_LESSON = "Answer with the name of the place only."
SPEC_REPLY = json.dumps(
    {
        "reasoning": "The question asks for a place; I answer with its name.",
        "final_answer": "Paris",
        "error_identification": "none",
        "key_insight": SPEC_LESSON,
        "extracted_learnings": [{"learning": SPEC_LESSON}],
        "update": {
            "reasoning": "One reusable lesson.",
            "operations": [{"type": "ADD", "section": "answers", "content": SPEC_LESSON}],
        },
    }
)


class ScriptedCompletion:
    """The real ``litellm.completion``, answering its n-th call with the n-th scripted ``mock_response``.

    An outcome is reply text or an exception instance (litellm raises it). The last
    outcome repeats once the script runs out. Every call's keyword arguments are kept.
    """

    def __init__(self, real: Callable[..., Any], outcomes: Sequence[Any]) -> None:
        self.real = real
        self.outcomes = list(outcomes)
        self.calls: list[dict[str, Any]] = []

    @property
    def models(self) -> list[str]:
        return [call["model"] for call in self.calls]

    @property
    def prompts(self) -> list[str]:
        """The content of every message of every call, in order."""
        return [
            str(message.get("content", "")) for call in self.calls for message in call.get("messages", [])
        ]

    def __call__(self, **kwargs: Any) -> Any:
        self.calls.append(kwargs)
        outcome = self.outcomes[min(len(self.calls), len(self.outcomes)) - 1]
        return self.real(**kwargs, mock_response=outcome)


def install_scripted_completion(monkeypatch: pytest.MonkeyPatch, *outcomes: Any) -> ScriptedCompletion:
    """Put a ScriptedCompletion in place of ``litellm.completion`` for the test."""
    litellm = import_litellm()
    scripted = ScriptedCompletion(litellm.completion, outcomes)
    monkeypatch.setattr(litellm, "completion", scripted)
    return scripted


def refuse_connections(monkeypatch: pytest.MonkeyPatch, who: str) -> None:
    """Fail the test when ``who`` tries to open a connection, instead of letting it reach a provider."""

    def refuse(self: socket.socket, address: Any) -> None:
        raise AssertionError(f"{who} tried to connect to {address}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)


def connection_error() -> Exception:
    """A transient failure as litellm raises it."""
    error: Exception = import_litellm().APIConnectionError(
        message="connection reset by peer", llm_provider="openai", model="gpt-4o-mini"
    )
    return error


def auth_error() -> Exception:
    """A permanent failure as litellm raises it."""
    error: Exception = import_litellm().AuthenticationError(
        message="invalid api key", llm_provider="openai", model="gpt-4o-mini"
    )
    return error


# -- LLMClient stand-ins ----------------------------------------------------------------------------


@dataclass
class RecordingLLM:
    """Returns the queued reply for each response model and records every call."""

    replies: dict[type[BaseModel], BaseModel]
    calls: list[tuple[str, type[BaseModel], dict[str, Any]]] = field(default_factory=list)

    def complete(self, prompt: str, **kwargs: Any) -> str:
        raise AssertionError("the roles use structured output only")

    def complete_structured(self, prompt: str, response_model: type[Any], **kwargs: Any) -> Any:
        self.calls.append((prompt, response_model, kwargs))
        return self.replies[response_model].model_copy(deep=True)

    @property
    def last_prompt(self) -> str:
        return self.calls[-1][0]

    @property
    def last_kwargs(self) -> dict[str, Any]:
        return self.calls[-1][2]


class ScriptedStructuredLLM:
    """Answers structured calls for ``model`` from a script of replies (or exceptions), recording prompts."""

    def __init__(self, model: type[BaseModel], *answers: BaseModel | Exception) -> None:
        self.model = model
        self.answers = list(answers)
        self.prompts: list[str] = []

    def complete(self, prompt: str, **kwargs: Any) -> Any:
        raise AssertionError("not used")

    def complete_structured(self, prompt: str, response_model: type[ModelT], **kwargs: Any) -> ModelT:
        assert response_model is self.model
        self.prompts.append(prompt)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return response_model.model_validate(answer.model_dump())


@dataclass
class ScriptedTextLLM:
    """Replies with the queued texts in order (as LLMResponse) and records every prompt."""

    replies: list[str]
    prompts: list[str] = field(default_factory=list)

    def complete(self, prompt: str, **kwargs: Any) -> LLMResponse:
        self.prompts.append(prompt)
        if len(self.prompts) > len(self.replies):
            raise AssertionError(f"unscripted call #{len(self.prompts)}")
        usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        return LLMResponse(text=self.replies[len(self.prompts) - 1], model="scripted", usage=usage)

    def complete_structured(self, prompt: str, response_model: type[Any], **kwargs: Any) -> Any:
        raise AssertionError("the Recursive Reflector uses free-text completion only")


def python_block(code: str) -> str:
    """A reply holding ``code`` as its one python block, with some prose around it."""
    return f"Let me check.\n```python\n{code}\n```\nThat should do it."
