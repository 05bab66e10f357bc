"""What the three roles return. The docstrings and field descriptions are the LLM's output spec."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field
from pydantic.json_schema import SkipJsonSchema

from .updates import UpdateBatch

__all__ = ["AgentOutput", "ExtractedLearning", "ReflectorOutput", "SkillManagerOutput", "SkillTag"]


class AgentOutput(BaseModel):
    """The agent's answer. Cite every skill you used as [skill-id] inside the reasoning."""

    reasoning: str = Field(description="Step-by-step reasoning, citing skills used as [skill-id].")
    final_answer: str = Field(description="The answer only, without explanation.")
    skill_ids: list[str] = Field(
        default_factory=list, description="Filled in from the citations in the reasoning; leave empty."
    )
    # Filled by the client after the call; kept out of the schema the model is asked to follow.
    raw: SkipJsonSchema[dict[str, Any]] = Field(default_factory=dict, exclude=True)


class SkillTag(BaseModel):
    """How one skill the agent used affected the outcome."""

    id: str = Field(description="The skill id, exactly as in the skillbook.")
    tag: str = Field(description="helpful, harmful or neutral.")


class ExtractedLearning(BaseModel):
    """One atomic, reusable lesson drawn from the trace."""

    learning: str = Field(description="The lesson as one imperative sentence.")
    atomicity_score: float = Field(default=1.0, description="1.0 if it states exactly one idea.")
    evidence: str = Field(default="", description="What in the trace shows it.")


class ReflectorOutput(BaseModel):
    """The analysis of one execution trace."""

    reasoning: str = Field(description="What happened and why, briefly.")
    error_identification: str = Field(default="", description="What went wrong, or 'none'.")
    root_cause_analysis: str = Field(default="", description="Why it went wrong.")
    correct_approach: str = Field(default="", description="What should have been done.")
    key_insight: str = Field(default="", description="The single most reusable lesson.")
    extracted_learnings: list[ExtractedLearning] = Field(default_factory=list)
    skill_tags: list[SkillTag] = Field(default_factory=list)
    # Filled by the client after the call; kept out of the schema the model is asked to follow.
    raw: SkipJsonSchema[dict[str, Any]] = Field(default_factory=dict, exclude=True)


class SkillManagerOutput(BaseModel):
    """The skillbook changes decided from a reflection."""

    update: UpdateBatch = Field(description="The operations to apply.")
    # Filled by the client after the call; kept out of the schema the model is asked to follow.
    raw: SkipJsonSchema[dict[str, Any]] = Field(default_factory=dict, exclude=True)
