"""The tool-using SkillManager's turns: it searches and reads skills, then answers with its update.

Each turn is one structured call (a :class:`SkillManagerTurn`): tool calls to run,
or the update. The calls run here, against the skillbook snapshot the SkillManager
decides on; their results go into the next turn's prompt. At most
``SkillLookup.max_calls`` tool calls run in all; once they are spent, the prompt
says so and the next turn must answer. Every turn goes through the role's client,
so each is metered (and limited) as any LLM call of the tenant is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, Field
from pydantic.json_schema import SkipJsonSchema

from ..core.prompt_budget import RelevanceScorer
from ..core.skill_lookup import PendingOperation
from ..core.updates import UpdateBatch
from ..protocols import SkillbookLike
from .helpers import format_optional
from .lookup_section import pending_table, related_pending, skills_table
from .prompts import SKILL_MANAGER_TOOLS_PROMPT

__all__ = ["SEARCH_SKILLS", "READ_SKILL", "SkillManagerTurn", "ToolCall", "ToolSession"]

SEARCH_SKILLS = "search_skills"
READ_SKILL = "read_skill"


class ToolCall(BaseModel):
    """One tool call: search_skills(query, k) or read_skill(skill_id)."""

    name: Literal["search_skills", "read_skill"] = Field(description="The tool to call.")
    query: str = Field(default="", description="search_skills: the text to find skills like.")
    k: int = Field(default=8, description="search_skills: how many skills at most.")
    skill_id: str = Field(default="", description="read_skill: the id of the skill to read.")


class SkillManagerTurn(BaseModel):
    """One turn of the tool-using skill manager: tool calls to run, or the final update (not both)."""

    tool_calls: list[ToolCall] = Field(default_factory=list, description="Tools to call now.")
    update: UpdateBatch | None = Field(default=None, description="The operations, once decided.")
    # Filled by the client after the call; kept out of the schema the model is asked to follow.
    raw: SkipJsonSchema[dict[str, Any]] = Field(default_factory=dict, exclude=True)


@dataclass
class ToolSession:
    """The tool calls of one SkillManager decision: what ran, what it found, and the calls left."""

    skillbook: SkillbookLike
    max_calls: int
    max_k: int
    scorer: RelevanceScorer | None = None
    pending: Sequence[PendingOperation] = ()
    results: list[str] = field(default_factory=list)
    calls: int = 0
    refused: int = 0

    @property
    def calls_left(self) -> int:
        """Tool calls that may still run."""
        return self.max_calls - self.calls

    def run(self, calls: Sequence[ToolCall]) -> None:
        """Run ``calls`` in order while calls are left; the rest are refused, and the results say so."""
        for call in calls:
            if self.calls_left <= 0:
                self.refused += 1
                self.results.append(f"### {_shown(call)}\nrefused: all {self.max_calls} tool calls are spent")
                continue
            self.calls += 1
            self.results.append(f"### {_shown(call)}\n{self._answer(call)}")

    def _answer(self, call: ToolCall) -> str:
        if call.name == SEARCH_SKILLS:
            return self._search(call.query, min(max(call.k, 1), self.max_k))
        skill = self.skillbook.get_skill(call.skill_id)
        if skill is None or not skill.is_active:
            return f"no active skill {call.skill_id!r}"
        return skills_table([skill]) + (
            f"\njustification: {skill.justification or '(none)'}\nevidence: {skill.evidence or '(none)'}"
        )

    def _search(self, query: str, k: int) -> str:
        skills = self.skillbook.most_relevant(query, k, self.scorer)
        pending = related_pending(self.pending, [query], k)
        found = skills_table(skills) if skills else "no skill like it"
        return f"{found}\n{pending_table(pending)}" if pending else found

    def prompt(self, inputs: dict[str, str]) -> str:
        """The next turn's prompt: the SkillManager's inputs, the tools, the results so far."""
        return SKILL_MANAGER_TOOLS_PROMPT.format(
            **inputs,
            max_k=self.max_k,
            calls_left=self.calls_left,
            tool_results=format_optional("\n\n".join(self.results)),
        )


def _shown(call: ToolCall) -> str:
    if call.name == SEARCH_SKILLS:
        return f"search_skills(query={call.query!r}, k={call.k})"
    return f"read_skill({call.skill_id!r})"
