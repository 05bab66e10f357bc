"""Named pipelines a worker can rebuild: the built-in ACE and TraceAnalyser ones, or yours.

A producer and every worker build the same step list from the same recipe
name, so a chain's step index means the same step everywhere. A custom recipe
is an import path ``"package.module:function"`` to a function taking
:class:`RecipeInputs` and returning the steps.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..core.environments import SimpleEnvironment
from ..core.skillbook import Skillbook
from ..protocols import AgentLike, DeduplicationManagerLike, ReflectorLike, SkillManagerLike
from ..steps import AgentStep, EvaluateStep, learning_tail

__all__ = ["BUILT_IN_RECIPES", "Recipe", "RecipeInputs", "import_object", "resolve_recipe"]


@dataclass(frozen=True)
class RecipeInputs:
    """What a recipe builds its steps from."""

    agent: AgentLike
    reflector: ReflectorLike
    skill_manager: SkillManagerLike
    skillbook: Skillbook
    checkpoint_interval: int = 10
    deduplicator: DeduplicationManagerLike | None = None  # ends the tail with a DeduplicateStep
    dedup_interval: int = 10


Recipe = Callable[[RecipeInputs], list[Any]]


def trace_analyser_recipe(inputs: RecipeInputs) -> list[Any]:
    """Reflect -> Tag -> Update -> Apply [-> Deduplicate] over recorded traces."""
    return _tail(inputs)


def ace_recipe(inputs: RecipeInputs) -> list[Any]:
    """Agent -> Evaluate (exact-match environment) -> Reflect -> Tag -> Update -> Apply [-> Deduplicate]."""
    return [AgentStep(inputs.agent), EvaluateStep(SimpleEnvironment()), *_tail(inputs)]


def _tail(inputs: RecipeInputs) -> list[Any]:
    return learning_tail(
        inputs.reflector,
        inputs.skill_manager,
        inputs.skillbook,
        dedup_manager=inputs.deduplicator,
        dedup_interval=inputs.dedup_interval,
    )


BUILT_IN_RECIPES: dict[str, Recipe] = {"trace_analyser": trace_analyser_recipe, "ace": ace_recipe}


def import_object(path: str) -> Any:
    """Import ``"package.module:attribute"``; ValueError naming the path when it cannot."""
    module_name, _, attribute = path.partition(":")
    if not module_name or not attribute:
        raise ValueError(f"{path!r} is not an import path of the form 'package.module:attribute'")
    try:
        return getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"cannot import {path!r}: {exc}") from exc


def resolve_recipe(name: str) -> Recipe:
    """A built-in recipe by name, or a custom one by import path."""
    if name in BUILT_IN_RECIPES:
        return BUILT_IN_RECIPES[name]
    if ":" in name:
        recipe = import_object(name)
        if not callable(recipe):
            raise ValueError(f"recipe {name!r} is not callable")
        return recipe  # type: ignore[no-any-return]
    known = ", ".join(sorted(BUILT_IN_RECIPES))
    raise ValueError(f"unknown recipe {name!r}: use one of {known} or 'package.module:function'")
