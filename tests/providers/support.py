"""Shared pieces of the provider tests: model names, scripted litellm answers, litellm errors."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ace_workers.providers._lazy_imports import import_litellm

MODEL = "openai/gpt-4o-mini"
FALLBACK = "openai/gpt-4o"
# litellm's mock responses always report this usage.
MOCK_USAGE = {"prompt_tokens": 10, "completion_tokens": 20, "total_tokens": 30}


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

    def __call__(self, **kwargs: Any) -> Any:
        self.calls.append(kwargs)
        outcome = self.outcomes[min(len(self.calls), len(self.outcomes)) - 1]
        return self.real(**kwargs, mock_response=outcome)


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
