"""The spec's ``protocols.llm`` path: the interface an LLM client satisfies."""

from . import LLMClientLike

__all__ = ["LLMClientLike"]
