"""The interfaces steps depend on; any object with the right methods fits (structural typing)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, TypeVar, runtime_checkable

# Types only: the protocols check methods, never these classes, so importing an interface (as the
# settings do, for PruneRule) loads neither pydantic nor the skillbook and its numpy index.
if TYPE_CHECKING:
    from pydantic import BaseModel

    from ..core.consolidation import ConsolidationBatch
    from ..core.context import SkillbookView
    from ..core.outputs import AgentOutput, ReflectorOutput, SkillManagerOutput
    from ..core.skillbook import Skillbook
    from ..core.writable import WritableSkillbook

__all__ = ["AgentLike", "DeduplicationManagerLike", "LLMClientLike", "ReflectorLike", "SkillManagerLike"]

ModelT = TypeVar("ModelT", bound="BaseModel")

SkillbookLike: TypeAlias = "Skillbook | SkillbookView"


@runtime_checkable
class LLMClientLike(Protocol):
    """An LLM client: free text, and structured output validated into a pydantic model."""

    def complete(self, prompt: str, **kwargs: Any) -> Any:
        """Return the model's reply to ``prompt``."""
        ...

    def complete_structured(self, prompt: str, response_model: type[ModelT], **kwargs: Any) -> ModelT:
        """Return the reply parsed and validated as ``response_model``."""
        ...


@runtime_checkable
class AgentLike(Protocol):
    """Answers a question with the skillbook in its prompt."""

    def generate(
        self,
        question: str,
        context: str,
        skillbook: SkillbookLike,
        reflection: ReflectorOutput | None = None,
        **kwargs: Any,
    ) -> AgentOutput:
        """Produce an answer."""
        ...


@runtime_checkable
class ReflectorLike(Protocol):
    """Analyses one execution trace."""

    def reflect(
        self,
        question: str,
        agent_output: AgentOutput,
        skillbook: SkillbookLike,
        ground_truth: str | None = None,
        feedback: str | None = None,
        **kwargs: Any,
    ) -> ReflectorOutput:
        """Produce a reflection."""
        ...


@runtime_checkable
class SkillManagerLike(Protocol):
    """Turns a reflection into skillbook operations."""

    def update_skills(
        self,
        reflection: ReflectorOutput,
        skillbook: SkillbookLike,
        question_context: str = "",
        progress: str = "",
        **kwargs: Any,
    ) -> SkillManagerOutput:
        """Produce the update batch."""
        ...


@runtime_checkable
class DeduplicationManagerLike(Protocol):
    """Finds near-duplicate skills and plans their consolidation.

    The caller applies the plan with ``skillbook.apply_consolidation(batch)``,
    the skillbook's one consolidation write path (a store-backed skillbook
    routes it to its store).
    """

    def get_similarity_report(self, skillbook: WritableSkillbook) -> str | None:
        """A report of similar skill pairs, or None when there is nothing to report."""
        ...

    def plan(self, skillbook: WritableSkillbook) -> ConsolidationBatch:
        """The merge/delete/keep/update operations to apply now; an empty batch when none."""
        ...
