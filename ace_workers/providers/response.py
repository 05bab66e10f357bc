"""What a free-text completion returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = ["ChatClient", "LLMResponse", "usage_from"]

USAGE_KEYS = ("prompt_tokens", "completion_tokens", "total_tokens")


@dataclass(frozen=True)
class LLMResponse:
    """One completion: its text, the model that produced it, token usage and cost."""

    text: str
    model: str
    usage: dict[str, int] = field(default_factory=lambda: dict.fromkeys(USAGE_KEYS, 0))
    cost: float | None = None
    raw: Any = field(default=None, repr=False, compare=False)


def usage_from(usage: Any) -> dict[str, int]:
    """Token counts from a provider usage object (or None) as a plain dict with every key present."""
    return {key: int(getattr(usage, key, None) or 0) for key in USAGE_KEYS}


class ChatClient(Protocol):
    """A free-text client that structured output wraps: one prompt, or a chat conversation."""

    def complete(self, prompt: str, **kwargs: Any) -> LLMResponse:
        """The reply to one prompt."""
        ...

    def complete_messages(self, messages: list[dict[str, Any]], **kwargs: Any) -> LLMResponse:
        """The reply to a chat conversation."""
        ...
