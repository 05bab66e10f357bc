"""A recording fake LLM client for the role tests: it returns real pydantic objects."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from pydantic import BaseModel

from ace_workers.core import Skillbook


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


@pytest.fixture
def skillbook() -> Skillbook:
    book = Skillbook()
    book.add_skill("data-loading", "Stream files larger than memory in chunks.")
    book.add_skill("math", "Check units before adding quantities.")
    book.add_skill("math", "Round only the final result.")
    return book
