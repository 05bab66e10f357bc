"""Named pipelines a worker can rebuild: the built-in ACE and TraceAnalyser ones, or yours.

``claude_code_traces``, ``openclaw_traces`` and ``browser_use_traces`` are
TraceAnalyser's with a converter first: their inputs are raw recorded sessions
(a list of events per trace, or a saved browser-use history, as ``ace-workers
enqueue --format claude-code|openclaw|browser-use`` sends them with these
recipes), converted to the trace dict on the worker.

A producer and every worker build the same step list from the same recipe
name, so a chain's step index means the same step everywhere. A recipe of your
own is a function taking :class:`RecipeInputs` and returning the steps, named in
the process's own configuration (``ACE_RECIPES=name=package.module:function``).

A task message carries only the recipe's *name*: a worker imports nothing a
message names, so whoever can write to the broker cannot make it run code.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ...core.environments import SimpleEnvironment
from ...core.writable import WritableSkillbook
from ...protocols import AgentLike, DeduplicationManagerLike, ReflectorLike, SkillManagerLike
from ...steps import AgentStep, EvaluateStep, learning_tail
from ...traces import BrowserToTrace, ClaudeCodeToTrace, OpenClawToTraceStep
from ..recipe_registry import BUILT_IN_RECIPES
from .errors import ImportPathError, RecipeNotCallableError, UnknownRecipeError

__all__ = ["BUILT_IN_RECIPES", "Recipe", "RecipeInputs", "import_object", "resolve_recipe"]


@dataclass(frozen=True)
class RecipeInputs:
    """What a recipe builds its steps from."""

    agent: AgentLike
    reflector: ReflectorLike
    skill_manager: SkillManagerLike
    skillbook: WritableSkillbook
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


def claude_code_traces_recipe(inputs: RecipeInputs) -> list[Any]:
    """ClaudeCodeToTrace (a transcript's events -> trace dict) -> the trace_analyser steps."""
    return [ClaudeCodeToTrace(), *_tail(inputs)]


def openclaw_traces_recipe(inputs: RecipeInputs) -> list[Any]:
    """OpenClawToTraceStep (a session's events -> trace dict) -> the trace_analyser steps."""
    return [OpenClawToTraceStep(), *_tail(inputs)]


def browser_use_traces_recipe(inputs: RecipeInputs) -> list[Any]:
    """BrowserToTrace (a saved AgentHistoryList -> trace dict) -> the trace_analyser steps."""
    return [BrowserToTrace(), *_tail(inputs)]


def _tail(inputs: RecipeInputs) -> list[Any]:
    return learning_tail(
        inputs.reflector,
        inputs.skill_manager,
        inputs.skillbook,
        dedup_manager=inputs.deduplicator,
        dedup_interval=inputs.dedup_interval,
    )


def import_object(path: str) -> Any:
    """Import ``"package.module:attribute"``; ImportPathError naming the path when it cannot."""
    module_name, _, attribute = path.partition(":")
    if not module_name or not attribute:
        raise ImportPathError(
            f"{path!r} is not an import path of the form 'package.module:attribute'", path=path
        )
    try:
        return getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as exc:
        raise ImportPathError(f"cannot import {path!r}: {exc}", path=path) from exc


def resolve_recipe(name: str, configured: Mapping[str, str]) -> Recipe:
    """The recipe called ``name``: a built-in one, or one of ``configured`` (name -> import path).

    The built-in ones are named in :data:`~ace_workers.distributed.recipe_registry.BUILT_IN_RECIPES`,
    as import paths of the functions above. Any other name is refused before anything is imported.

    Raises:
        UnknownRecipeError: ``name`` is neither built in nor configured.
        ImportPathError: a configured import path does not import (RecipeNotCallableError: it
            names no callable); both are ValueErrors.
    """
    path = (BUILT_IN_RECIPES.get(name) or configured.get(name)) if isinstance(name, str) else None
    if path is None:
        raise UnknownRecipeError(name, [*BUILT_IN_RECIPES, *configured])
    recipe = import_object(path)
    if not callable(recipe):
        raise RecipeNotCallableError(name, path)
    return recipe  # type: ignore[no-any-return]
