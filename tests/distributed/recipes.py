"""Custom recipes used by the distributed tests (imported by workers by path)."""

from __future__ import annotations

from typing import Any

from ace_workers.core import ACEStepContext
from ace_workers.distributed.recipes import RecipeInputs
from ace_workers.steps import learning_tail


class Explode:
    """A learning step that always fails."""

    requires = frozenset({"trace"})
    provides: frozenset[str] = frozenset()
    async_boundary = True

    def __call__(self, ctx: ACEStepContext) -> ACEStepContext:
        raise RuntimeError("boom on purpose")


def failing_recipe(inputs: RecipeInputs) -> list[Any]:
    """Explode, then the usual learning tail (never reached)."""
    tail = learning_tail(inputs.reflector, inputs.skill_manager, inputs.skillbook)
    for step in tail:
        step.async_boundary = False  # type: ignore[attr-defined]
    return [Explode(), *tail]
