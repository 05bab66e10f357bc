"""ACE: the live adaptive loop - the agent answers, then it learns from how it did."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Any

from pipeline import Pipeline, SampleResult

from ..core.context import ACEStepContext, SkillbookView
from ..core.environments import Sample, TaskEnvironment
from ..core.skillbook import Skillbook
from ..protocols import AgentLike, DeduplicationManagerLike, ReflectorLike, SkillManagerLike
from ..steps import AgentStep, EvaluateStep, learning_tail
from .base import ACERunner

__all__ = ["ACE"]


class ACE(ACERunner):
    """Agent -> Evaluate in the foreground; Reflect -> Tag -> Update -> Apply in the background.

    The environment is optional: without one the trace still carries the
    answer and the ground truth for the Reflector to compare.
    """

    @classmethod
    def build_steps(
        cls,
        *,
        agent: AgentLike,
        reflector: ReflectorLike,
        skill_manager: SkillManagerLike,
        skillbook: Skillbook,
        environment: TaskEnvironment | None = None,
        dedup_manager: DeduplicationManagerLike | None = None,
        dedup_interval: int = 10,
        checkpoint_dir: str | os.PathLike[str] | None = None,
        checkpoint_interval: int = 10,
        extra_steps: Sequence[Any] | None = None,
    ) -> list[Any]:
        """The steps ``from_roles`` would compose, to inspect or recompose."""
        tail: list[Any] = learning_tail(
            reflector,
            skill_manager,
            skillbook,
            dedup_manager=dedup_manager,
            dedup_interval=dedup_interval,
            checkpoint_dir=checkpoint_dir,
            checkpoint_interval=checkpoint_interval,
        )
        return [AgentStep(agent), EvaluateStep(environment), *tail, *(extra_steps or [])]

    @classmethod
    def from_roles(
        cls,
        *,
        agent: AgentLike,
        reflector: ReflectorLike,
        skill_manager: SkillManagerLike,
        skillbook: Skillbook | None = None,
        **options: Any,
    ) -> ACE:
        """Build from role instances; options as in :meth:`build_steps`."""
        skillbook = skillbook if skillbook is not None else Skillbook()
        steps = cls.build_steps(
            agent=agent, reflector=reflector, skill_manager=skill_manager, skillbook=skillbook, **options
        )
        return cls(Pipeline(steps), skillbook)

    def run(
        self,
        samples: Iterable[Sample],
        epochs: int = 1,
        *,
        wait: bool = True,
        workers: int = 1,
    ) -> list[SampleResult[ACEStepContext]]:
        """Answer and learn from every sample, ``epochs`` times.

        With ``wait=False`` this returns once the answers are in; learning goes
        on in the background (see ``learning_stats``, ``wait_for_background``).
        """
        return self._run(samples, epochs=epochs, wait=wait, workers=workers)

    def _build_context(
        self,
        item: Any,
        *,
        epoch: int,
        total_epochs: int,
        index: int,
        total: int | None,
        global_sample_index: int,
    ) -> ACEStepContext:
        return ACEStepContext(
            sample=item,
            skillbook=SkillbookView(self.skillbook),
            epoch=epoch,
            total_epochs=total_epochs,
            step_index=index,
            total_steps=total,
            global_sample_index=global_sample_index,
        )
