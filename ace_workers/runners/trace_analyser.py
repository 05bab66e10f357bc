"""TraceAnalyser: learn a skillbook from pre-recorded execution traces."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Any

from pipeline import Pipeline, SampleResult

from ..core.context import ACEStepContext, SkillbookView
from ..core.skillbook import Skillbook
from ..protocols import DeduplicationManagerLike, ReflectorLike, SkillManagerLike
from ..steps import learning_tail
from .base import ACERunner

__all__ = ["TraceAnalyser"]


class TraceAnalyser(ACERunner):
    """Reflect -> Tag -> Update -> Apply over traces of any shape; no agent runs.

    Each trace goes onto the context as it is; the Reflector makes sense of it.
    """

    @classmethod
    def build_steps(
        cls,
        *,
        reflector: ReflectorLike,
        skill_manager: SkillManagerLike,
        skillbook: Skillbook,
        dedup_manager: DeduplicationManagerLike | None = None,
        dedup_interval: int = 10,
        checkpoint_dir: str | os.PathLike[str] | None = None,
        checkpoint_interval: int = 10,
        extra_steps: Sequence[Any] | None = None,
    ) -> list[Any]:
        """The steps ``from_roles`` would compose, to inspect or recompose."""
        steps: list[Any] = learning_tail(
            reflector,
            skill_manager,
            skillbook,
            dedup_manager=dedup_manager,
            dedup_interval=dedup_interval,
            checkpoint_dir=checkpoint_dir,
            checkpoint_interval=checkpoint_interval,
        )
        return [*steps, *(extra_steps or [])]

    @classmethod
    def from_roles(
        cls,
        *,
        reflector: ReflectorLike,
        skill_manager: SkillManagerLike,
        skillbook: Skillbook | None = None,
        **options: Any,
    ) -> TraceAnalyser:
        """Build from role instances; options as in :meth:`build_steps`."""
        skillbook = skillbook if skillbook is not None else Skillbook()
        steps = cls.build_steps(
            reflector=reflector, skill_manager=skill_manager, skillbook=skillbook, **options
        )
        return cls(Pipeline(steps), skillbook)

    def run(
        self, traces: Iterable[Any], epochs: int = 1, *, wait: bool = True, workers: int = 1
    ) -> list[SampleResult[ACEStepContext]]:
        """Learn from every trace, ``epochs`` times; one result per trace per epoch."""
        return self._run(traces, epochs=epochs, wait=wait, workers=workers)

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
            skillbook=SkillbookView(self.skillbook),
            trace=item,
            epoch=epoch,
            total_epochs=total_epochs,
            step_index=index,
            total_steps=total,
            global_sample_index=global_sample_index,
        )
