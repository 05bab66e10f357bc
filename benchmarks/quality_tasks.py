"""The task families benchmarks/learning_quality.py learns: the simulator's, a JSONL file, or reasoning-gym's.

A family splits into three disjoint task sets: ``train`` (what the fleet learns from,
as recorded failures), ``held_out`` (what accuracy and rule recall are measured on)
and ``validation`` (what gated promotion evaluates on, so the gate never sees the
held-out answers). Only the simulator's family knows its hidden rules (``topics``):
rule recall, duplication and harmful-rule survival need them.

A JSONL task file holds one task a line, the format of ``skillbook evaluate --tasks``:
``{"question": "...", "ground_truth": "...", "context": "..."}`` (context optional).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ace_workers.core.environments import EnvironmentResult, Sample, SimpleEnvironment, TaskEnvironment
from ace_workers.core.outputs import AgentOutput
from ace_workers.distributed.ops.evaluation import read_task_file
from ace_workers.sim import TOPICS, Topic, make_tasks

__all__ = ["SIM_FAMILY", "TaskFamily", "load_family"]

SIM_FAMILY = "sim"
REASONING_GYM_PREFIX = "reasoning-gym:"
FAILED_ANSWER = "no idea"  # what a recorded failure answered, as in ace_workers.sim.failure_traces


@dataclass(frozen=True)
class TaskFamily:
    """Three disjoint task sets, how answers are scored, and the hidden rules when they are known."""

    name: str
    train: tuple[Sample, ...]
    held_out: tuple[Sample, ...]
    validation: tuple[Sample, ...]
    environment: TaskEnvironment
    topics: tuple[Topic, ...] = ()

    def training_traces(self, misleading: float, seed: int) -> list[dict[str, str]]:
        """The training tasks as recorded failures; a ``misleading`` share of them (chosen by
        ``seed``) carries feedback that calls the right answer wrong."""
        count = round(len(self.train) * misleading)
        misled = set(random.Random(seed).sample(range(len(self.train)), count))
        return [
            self._misleading_trace(index, sample) if index in misled else _failure_trace(sample)
            for index, sample in enumerate(self.train)
        ]

    def topic_of(self, sample: Sample) -> Topic | None:
        """The hidden rule's topic of a simulator task; None for other families."""
        name = (sample.metadata or {}).get("topic")
        return next((topic for topic in self.topics if topic.name == name), None)

    def _misleading_trace(self, index: int, sample: Sample) -> dict[str, str]:
        topic = self.topic_of(sample)
        if topic is not None:
            # As ace_workers.sim.misleading_traces: the right answer called wrong, the wrong rule stated.
            return {
                "question": sample.question,
                "answer": sample.ground_truth or "",
                "feedback": f"Incorrect. {topic.wrong_rule}",
            }
        # Without a known rule: the right answer called wrong, another task's answer given as expected.
        other = self.train[(index + 1) % len(self.train)].ground_truth or ""
        return {
            "question": sample.question,
            "context": sample.context,
            "answer": sample.ground_truth or "",
            "ground_truth": other,
            "feedback": f"Incorrect: expected {other!r}.",
        }


def _failure_trace(sample: Sample) -> dict[str, str]:
    trace = {
        "question": sample.question,
        "answer": FAILED_ANSWER,
        "ground_truth": sample.ground_truth or "",
        "feedback": "Incorrect.",
    }
    if sample.context:
        trace["context"] = sample.context
    return trace


def load_family(source: str, *, train: int, held_out: int, topics: int, seed: int) -> TaskFamily:
    """The family ``source`` names: "sim", a JSONL file, or "reasoning-gym:NAME".

    Raises:
        TaskFileError: a task file that cannot be read or holds a bad line (file and line named).
        SystemExit: reasoning-gym named but not installed, or too few tasks for the three sets.
    """
    if source == SIM_FAMILY:
        chosen = TOPICS[:topics]
        return TaskFamily(
            SIM_FAMILY,
            tuple(make_tasks(train, seed=seed, topics=chosen)),
            tuple(make_tasks(held_out, seed=seed + 1000, topics=chosen)),
            tuple(make_tasks(held_out, seed=seed + 2000, topics=chosen)),
            SimpleEnvironment(),
            chosen,
        )
    if source.startswith(REASONING_GYM_PREFIX):
        return _reasoning_gym(source.removeprefix(REASONING_GYM_PREFIX), train, held_out, seed)
    samples = list(read_task_file(source).samples)
    random.Random(seed).shuffle(samples)
    return _split(source, samples, train, held_out, SimpleEnvironment())


def _split(
    name: str, samples: list[Sample], train: int, held_out: int, environment: TaskEnvironment
) -> TaskFamily:
    needed = train + 2 * held_out
    if len(samples) < needed:
        raise SystemExit(
            f"{name}: {len(samples)} tasks, but --train {train} and --held-out {held_out} need {needed} "
            "(train, held-out and validation sets are disjoint)"
        )
    return TaskFamily(
        name,
        tuple(samples[:train]),
        tuple(samples[train : train + held_out]),
        tuple(samples[train + held_out : needed]),
        environment,
    )


class ScoredEnvironment(TaskEnvironment):
    """Scores an answer with a task family's own scorer (reasoning-gym's ``score_answer``)."""

    def __init__(self, score: Callable[[str, Sample], float]) -> None:
        self._score = score

    def evaluate(self, sample: Any, agent_output: AgentOutput) -> EnvironmentResult:
        """``accuracy`` 1.0 when the scorer gives full marks, else 0.0."""
        correct = self._score(agent_output.final_answer, sample) >= 1.0
        feedback = "Correct." if correct else f"Incorrect: expected {sample.ground_truth!r}."
        return EnvironmentResult(
            feedback=feedback, ground_truth=sample.ground_truth, metrics={"accuracy": float(correct)}
        )


def _reasoning_gym(name: str, train: int, held_out: int, seed: int) -> TaskFamily:
    try:
        import reasoning_gym  # not a dependency: only when the user asks for one of its families
    except ImportError:
        raise SystemExit(
            f"--tasks {REASONING_GYM_PREFIX}{name} needs reasoning-gym: pip install reasoning-gym"
        ) from None
    dataset = reasoning_gym.create_dataset(name, size=train + 2 * held_out, seed=seed)
    entries = {f"{name}-{index:05d}": entry for index, entry in enumerate(dataset)}
    samples = [
        Sample(question=entry["question"], ground_truth=str(entry["answer"]), id=key, context="")
        for key, entry in entries.items()
    ]

    def score(answer: str, sample: Sample) -> float:
        return float(dataset.score_answer(answer=answer, entry=entries[sample.id or ""]))

    return _split(f"{REASONING_GYM_PREFIX}{name}", samples, train, held_out, ScoredEnvironment(score))
