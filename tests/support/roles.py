"""Hand-written fakes of the ACE roles, returning real pydantic outputs, and output builders."""

from __future__ import annotations

import threading
from typing import Any

from ace_workers.core import (
    AgentOutput,
    ReflectorOutput,
    Skillbook,
    SkillManagerOutput,
    SkillTag,
    UpdateBatch,
    UpdateOperation,
)

TIMEOUT = 10.0


class FakeAgent:
    """Answers ``answer`` and cites the first skill of the skillbook it is shown."""

    def __init__(self, answer: str = "4") -> None:
        self.answer = answer
        self.calls: list[dict[str, Any]] = []

    def generate(
        self,
        question: str,
        context: str,
        skillbook: Any,
        reflection: ReflectorOutput | None = None,
        **kwargs: Any,
    ) -> AgentOutput:
        self.calls.append(
            {
                "question": question,
                "context": context,
                "skillbook": skillbook,
                "thread": threading.current_thread().name,
                **kwargs,
            }
        )
        cited = [skill.id for skill in skillbook][:1]
        reasoning = " ".join(f"Following [{skill_id}]." for skill_id in cited) or "From scratch."
        return AgentOutput(reasoning=reasoning, final_answer=self.answer, skill_ids=cited)


class FakeReflector:
    """Tags every skill the agent cited as ``tag`` (plus any ``extra_tags``); can be held at a gate."""

    def __init__(
        self,
        tag: str = "helpful",
        extra_tags: list[SkillTag] | None = None,
        gate: threading.Event | None = None,
    ) -> None:
        self.tag = tag
        self.extra_tags = extra_tags or []
        self.gate = gate
        self.calls: list[dict[str, Any]] = []

    def reflect(
        self,
        question: str,
        agent_output: AgentOutput,
        skillbook: Any,
        ground_truth: str | None = None,
        feedback: str | None = None,
        **kwargs: Any,
    ) -> ReflectorOutput:
        if self.gate is not None and not self.gate.wait(TIMEOUT):
            raise AssertionError("the test never opened the reflector's gate")
        self.calls.append(
            {
                "question": question,
                "agent_output": agent_output,
                "skillbook": skillbook,
                "ground_truth": ground_truth,
                "feedback": feedback,
                "thread": threading.current_thread().name,
                **kwargs,
            }
        )
        tags = [SkillTag(id=skill_id, tag=self.tag) for skill_id in agent_output.skill_ids]
        return ReflectorOutput(
            reasoning=f"Reflected on {question!r}.",
            key_insight=f"Check the answer to {question or 'the task'}.",
            skill_tags=[*tags, *self.extra_tags],
        )


class FakeSkillManager:
    """Adds one skill per reflection (its key insight), or returns ``operations`` when given."""

    def __init__(self, operations: list[UpdateOperation] | None = None) -> None:
        self.operations = operations
        self.calls: list[dict[str, Any]] = []

    def update_skills(
        self,
        reflection: ReflectorOutput,
        skillbook: Any,
        question_context: str = "",
        progress: str = "",
        **kwargs: Any,
    ) -> SkillManagerOutput:
        self.calls.append(
            {
                "reflection": reflection,
                "skillbook": skillbook,
                "question_context": question_context,
                "progress": progress,
                "thread": threading.current_thread().name,
                **kwargs,
            }
        )
        operations = self.operations
        if operations is None:
            operations = [UpdateOperation(type="ADD", section="checks", content=reflection.key_insight)]
        return SkillManagerOutput(update=UpdateBatch(reasoning="one lesson", operations=operations))


class FakeDedupManager:
    """Returns ``report`` and records the skillbook and thread of every call."""

    def __init__(self, report: str | None = "math-00001 ~ math-00002 (0.93)") -> None:
        self.report = report
        self.calls: list[tuple[Skillbook, str]] = []

    def get_similarity_report(self, skillbook: Skillbook) -> str | None:
        self.calls.append((skillbook, threading.current_thread().name))
        return self.report


def reflection(*tags: tuple[str, str]) -> ReflectorOutput:
    """A ReflectorOutput tagging ``(skill_id, tag)`` pairs."""
    return ReflectorOutput(
        reasoning="r", key_insight="k", skill_tags=[SkillTag(id=i, tag=t) for i, t in tags]
    )


def manager_output(*operations: UpdateOperation) -> SkillManagerOutput:
    """A SkillManagerOutput holding ``operations``."""
    return SkillManagerOutput(update=UpdateBatch(reasoning="test", operations=list(operations)))
