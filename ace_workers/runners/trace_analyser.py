"""TraceAnalyser: learn a skillbook from pre-recorded execution traces."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from pipeline import Pipeline, SampleResult

from ..core.context import ACEStepContext
from ..core.skillbook import Skillbook
from ..protocols import ReflectorLike, SkillManagerLike
from ..steps import check_tail_options, learning_tail
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
        extra_steps: Sequence[Any] | None = None,
        **tail_options: Any,
    ) -> list[Any]:
        """The steps ``from_roles`` would compose, to inspect or recompose.

        ``tail_options`` go to :func:`~ace_workers.steps.learning_tail`
        (dedup_manager or dedup_config, dedup_interval, checkpoint_dir,
        checkpoint_interval);
        ``extra_steps`` are appended last.
        """
        check_tail_options(tail_options, "TraceAnalyser.from_roles")
        steps: list[Any] = learning_tail(
            reflector,
            skill_manager,
            skillbook,
            **tail_options,
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

    def _item_fields(self, item: Any) -> dict[str, Any]:
        return {"trace": item}
