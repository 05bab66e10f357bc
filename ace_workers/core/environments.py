"""Samples to learn from, and environments that judge an agent's answer."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .outputs import AgentOutput

if TYPE_CHECKING:
    from .context import ACESample

__all__ = ["EnvironmentResult", "Sample", "SimpleEnvironment", "TaskEnvironment"]


@dataclass
class Sample:
    """One task: a question, optional context and ground truth."""

    question: str
    context: str = ""
    ground_truth: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    id: str | None = None


@dataclass
class EnvironmentResult:
    """An environment's verdict: feedback text for the Reflector, and optional metrics."""

    feedback: str
    ground_truth: str | None = None
    metrics: dict[str, float] = field(default_factory=dict)


class TaskEnvironment(ABC):
    """Judges an agent's output for a sample."""

    @abstractmethod
    def evaluate(self, sample: ACESample, agent_output: AgentOutput) -> EnvironmentResult:
        """Return feedback on ``agent_output`` for ``sample``."""


def _normalise(text: str) -> str:
    return " ".join(text.strip().lower().split())


class SimpleEnvironment(TaskEnvironment):
    """Compares the final answer with the ground truth, ignoring case and spacing."""

    def evaluate(self, sample: ACESample, agent_output: AgentOutput) -> EnvironmentResult:
        """Feedback says correct or incorrect; metrics carry ``accuracy`` 1.0 or 0.0."""
        if sample.ground_truth is None:
            return EnvironmentResult(feedback="No ground truth to compare with.")
        correct = _normalise(agent_output.final_answer) == _normalise(sample.ground_truth)
        feedback = (
            "Correct."
            if correct
            else f"Incorrect: expected {sample.ground_truth!r}, got {agent_output.final_answer!r}."
        )
        return EnvironmentResult(
            feedback=feedback, ground_truth=sample.ground_truth, metrics={"accuracy": float(correct)}
        )
