"""A scripted LLM client for the Recursive Reflector tests: it replies with real completion objects."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ace_workers.providers import LLMResponse


@dataclass
class ScriptedLLM:
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
