"""LangChainLiteLLMClient: ACE's roles on a LangChain ``ChatLiteLLM`` model (extra ``langchain``).

For teams whose model access already goes through LangChain: the same
litellm model names, LangChain's callbacks and tracing on every role call.
Structured output asks for JSON matching the schema and re-asks on a reply
that fails validation (:mod:`ace_workers.providers.reask`).
"""

from __future__ import annotations

import importlib
from typing import Any, TypeVar

from pydantic import BaseModel

from ..errors import LLMError, MissingExtraError
from ._lazy_imports import import_litellm
from .reask import complete_structured_by_reasking
from .response import LLMResponse

__all__ = ["LangChainLiteLLMClient"]

ModelT = TypeVar("ModelT", bound=BaseModel)


class LangChainLiteLLMClient:
    """An LLM client (``complete``, ``complete_messages``, ``complete_structured``) on ``ChatLiteLLM``.

    ``model_kwargs`` go to every litellm call (``api_base``, ``mock_response``...).

    Raises:
        MissingExtraError: at construction, when ``langchain-litellm`` is not installed.
    """

    def __init__(
        self,
        model: str,
        *,
        temperature: float = 0.0,
        max_tokens: int | None = 2048,
        max_retries: int = 2,
        **model_kwargs: Any,
    ) -> None:
        if max_retries < 0:
            raise ValueError(f"LangChainLiteLLMClient: max_retries must be >= 0, got {max_retries}")
        import_litellm()  # first, so litellm reads its bundled cost map instead of the network
        try:
            chat_models = importlib.import_module("langchain_litellm")
        except ImportError:
            raise MissingExtraError("LangChainLiteLLMClient", "langchain", "langchain_litellm") from None
        self.model = model
        self.max_retries = max_retries
        self.chat = chat_models.ChatLiteLLM(
            model=model, temperature=temperature, max_tokens=max_tokens, model_kwargs=model_kwargs
        )

    def __repr__(self) -> str:
        return f"LangChainLiteLLMClient({self.model!r})"

    def complete(self, prompt: str, **kwargs: Any) -> LLMResponse:
        """The model's reply to one prompt.

        Raises:
            LLMError: the call failed (after litellm's own retries, if configured).
        """
        return self.complete_messages([{"role": "user", "content": prompt}], **kwargs)

    def complete_messages(self, messages: list[dict[str, Any]], **kwargs: Any) -> LLMResponse:
        """The model's reply to a conversation of ``{"role", "content"}`` dicts."""
        try:
            message = self.chat.invoke(messages, **kwargs)
        except Exception as exc:  # provider errors come through LangChain in many types
            raise LLMError(f"{self.model}: {type(exc).__name__}: {exc}") from exc
        content = message.content if isinstance(message.content, str) else str(message.content)
        usage = _usage(getattr(message, "usage_metadata", None))
        return LLMResponse(text=content, model=self.model, usage=usage, cost=self._cost(usage), raw=message)

    def complete_structured(self, prompt: str, response_model: type[ModelT], **kwargs: Any) -> ModelT:
        """The reply validated as ``response_model``; its ``raw`` field (if any) gets usage and cost.

        Raises:
            RetriesExhausted: the reply still failed validation after ``max_retries`` re-asks.
            LLMError: a call failed.
        """
        max_retries = int(kwargs.pop("max_retries", self.max_retries))
        return complete_structured_by_reasking(
            lambda asked: self.complete(asked, **kwargs), prompt, response_model, max_retries
        )

    def _cost(self, usage: dict[str, int]) -> float | None:
        try:
            prompt_cost, completion_cost = import_litellm().cost_per_token(
                model=self.model,
                prompt_tokens=usage["prompt_tokens"],
                completion_tokens=usage["completion_tokens"],
            )
        except Exception:  # a model litellm has no price for
            return None
        return float(prompt_cost + completion_cost)


def _usage(metadata: Any) -> dict[str, int]:
    metadata = metadata if isinstance(metadata, dict) else {}
    prompt = int(metadata.get("input_tokens") or 0)
    completion = int(metadata.get("output_tokens") or 0)
    total = int(metadata.get("total_tokens") or prompt + completion)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": total}
