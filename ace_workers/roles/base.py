"""What the three roles share: an LLM client, a prompt template and a retry budget."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

from ..protocols import LLMClientLike

__all__ = ["LLMRole"]

ModelT = TypeVar("ModelT", bound=BaseModel)


class LLMRole:
    """Base of Agent, Reflector and SkillManager: formats a prompt, asks for a validated model."""

    def __init__(self, llm: LLMClientLike, prompt_template: str, *, max_retries: int = 3) -> None:
        self.llm = llm
        self.prompt_template = prompt_template
        self.max_retries = max_retries

    def _ask(self, prompt: str, response_model: type[ModelT], kwargs: dict[str, Any]) -> ModelT:
        # The role's retry budget applies unless the call names its own.
        call_kwargs: dict[str, Any] = {"max_retries": self.max_retries, **kwargs}
        return self.llm.complete_structured(prompt, response_model, **call_kwargs)
