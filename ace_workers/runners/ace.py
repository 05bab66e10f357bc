"""ACE: the live adaptive loop - the agent answers, then it learns from how it did."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from pipeline import Pipeline, SampleResult

from ..core.context import ACEStepContext
from ..core.environments import Sample, TaskEnvironment
from ..core.skillbook import Skillbook
from ..protocols import AgentLike, ReflectorLike, SkillManagerLike
from ..steps import AgentStep, EvaluateStep, check_tail_options, learning_tail
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
        extra_steps: Sequence[Any] | None = None,
        **tail_options: Any,
    ) -> list[Any]:
        """The steps ``from_roles`` would compose, to inspect or recompose.

        ``tail_options`` go to :func:`~ace_workers.steps.learning_tail`
        (dedup_manager or dedup_config, dedup_interval, checkpoint_dir,
        checkpoint_interval);
        ``extra_steps`` are appended last.
        """
        check_tail_options(tail_options, "ACE.from_roles")
        tail: list[Any] = learning_tail(
            reflector,
            skill_manager,
            skillbook,
            **tail_options,
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

    def _item_fields(self, item: Any) -> dict[str, Any]:
        return {"sample": item}
