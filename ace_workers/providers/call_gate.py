"""The gate every LLM attempt passes: asked before the call, told the usage after it, told of a 429.

The providers know nothing of what is behind a gate (the fleet's limiter in Redis, see
``ace_workers.distributed.tenancy``): :class:`CallGate` is the whole contract.
:class:`~.litellm_client.LiteLLMClient` passes it on every attempt (retries, fallbacks,
structured output's re-asks); :class:`GatedClient` puts one in front of any other client
(the simulated LLM, an ``ACE_LLM_FACTORY`` client), once per ``complete`` or
``complete_structured``, settling with the usage in the output's ``raw`` metadata.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel

__all__ = ["CallGate", "GatedClient", "is_rate_limit", "retry_after_of", "usage_and_cost"]

logger = logging.getLogger(__name__)

ModelT = TypeVar("ModelT", bound=BaseModel)

# A prompt as a gate sees it: one text, or a chat conversation.
Prompt = str | list[dict[str, Any]]


class CallGate(Protocol):
    """What an LLM client asks before each attempt and tells after it."""

    def before(self, model: str, prompt: Prompt, max_tokens: int | None) -> Any:
        """Wait until the attempt may go (or raise); return a ticket for ``after`` or ``rate_limited``."""
        ...

    def after(self, ticket: Any, usage: Mapping[str, int] | None, cost: float | None) -> None:
        """The attempt ended: its token usage and cost; usage None: it failed, {} or cost None: not said."""
        ...

    def rate_limited(self, ticket: Any, error: BaseException) -> None:
        """The provider answered the attempt with a rate limit (429)."""
        ...


def is_rate_limit(error: BaseException) -> bool:
    """True for a provider's rate-limit answer: status 429, a RateLimitError, or a message saying 429."""
    if getattr(error, "status_code", None) == 429:
        return True
    if any(cls.__name__ == "RateLimitError" for cls in type(error).__mro__):
        return True
    text = str(error).lower()
    return "429" in text or "rate limit" in text


def retry_after_of(error: BaseException) -> float | None:
    """The seconds a 429 asked to wait (its Retry-After header), when it said."""
    response = getattr(error, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    try:
        value = headers.get("retry-after")
        return float(value) if value is not None else None
    except (TypeError, ValueError, AttributeError):
        return None


def usage_and_cost(output: Any) -> tuple[dict[str, int] | None, float | None]:
    """Token usage and cost of a client's output: its ``usage``/``cost``, or those in its ``raw`` dict."""
    usage, cost = getattr(output, "usage", None), getattr(output, "cost", None)
    raw = getattr(output, "raw", None)
    if not isinstance(usage, Mapping) and isinstance(raw, Mapping):
        usage, cost = raw.get("usage"), raw.get("cost")
    if not isinstance(usage, Mapping):
        return None, cost if isinstance(cost, int | float) else None
    counts = {key: int(value) for key, value in usage.items() if isinstance(value, int | float)}
    return counts, float(cost) if isinstance(cost, int | float) and not isinstance(cost, bool) else None


class GatedClient:
    """Any LLMClientLike behind a gate: each ``complete``/``complete_structured`` passes it once.

    ``model`` is the model name the gate knows the client by (``sim``, the factory's model);
    everything else (``call_count``, ``usage``, ``model`` for tracing) is the wrapped client's.
    """

    def __init__(self, llm: Any, gate: CallGate, model: str, *, max_tokens: int | None = None) -> None:
        self.llm = llm
        self.gate = gate
        self.gated_model = model
        self.max_tokens = max_tokens

    def __getattr__(self, name: str) -> Any:
        # Only what this object lacks; never dunders or ``llm`` itself (a copy being built has no
        # ``llm`` yet, and asking it for one would recurse).
        if name.startswith("__") or name == "llm":
            raise AttributeError(name)
        return getattr(self.llm, name)

    def __repr__(self) -> str:
        return f"GatedClient({self.llm!r}, model={self.gated_model!r})"

    def complete(self, prompt: str, **kwargs: Any) -> Any:
        """The wrapped client's reply, through the gate."""
        return self._through_gate(prompt, kwargs, lambda: self.llm.complete(prompt, **kwargs))

    def complete_structured(self, prompt: str, response_model: type[ModelT], **kwargs: Any) -> ModelT:
        """The wrapped client's structured reply, through the gate."""
        result: ModelT = self._through_gate(
            prompt, kwargs, lambda: self.llm.complete_structured(prompt, response_model, **kwargs)
        )
        return result

    def _through_gate(self, prompt: str, kwargs: Mapping[str, Any], call: Any) -> Any:
        ticket = self.gate.before(self.gated_model, prompt, kwargs.get("max_tokens", self.max_tokens))
        try:
            output = call()
        except BaseException as error:
            if isinstance(error, Exception) and is_rate_limit(error):
                self.gate.rate_limited(ticket, error)
            else:
                self.gate.after(ticket, None, None)
            raise
        usage, cost = usage_and_cost(output)
        # An empty usage: the call went through but did not say what it used (the gate estimates).
        self.gate.after(ticket, usage or {}, cost)
        return output
