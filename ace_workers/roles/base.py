"""What the three roles share: an LLM client, a prompt template and a retry budget."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

from ..core.prompt_budget import PromptBudget, RelevanceScorer
from ..observability.spans import traced_llm_call
from ..protocols import LLMClientLike, SkillbookLike

__all__ = ["LLMRole"]

ModelT = TypeVar("ModelT", bound=BaseModel)


class LLMRole:
    """Base of Agent, Reflector and SkillManager: formats a prompt, asks for a validated model."""

    def __init__(
        self,
        llm: LLMClientLike,
        prompt_template: str,
        *,
        max_retries: int = 3,
        prompt_budget: PromptBudget | None = None,
        relevance: RelevanceScorer | None = None,
    ) -> None:
        self.llm = llm
        self.prompt_template = prompt_template
        self.max_retries = max_retries
        self.prompt_budget = prompt_budget
        self.relevance = relevance

    def _skillbook_prompt(self, skillbook: SkillbookLike, query: str) -> str:
        """The skillbook table, within this role's budget by relevance to ``query``."""
        if self.prompt_budget is None:
            return skillbook.as_prompt()
        return skillbook.as_prompt(self.prompt_budget, query, self.relevance)

    def _ask(self, prompt: str, response_model: type[ModelT], kwargs: dict[str, Any]) -> ModelT:
        # The role's retry budget applies unless the call names its own.
        call_kwargs: dict[str, Any] = {"max_retries": self.max_retries, **kwargs}
        # Every role's call goes through here: one "chat <model>" span each, whatever the client.
        with traced_llm_call(
            self.llm, response_model=response_model.__name__, role=type(self).__name__
        ) as call:
            output = self.llm.complete_structured(prompt, response_model, **call_kwargs)
            call.record(output)
        return output
