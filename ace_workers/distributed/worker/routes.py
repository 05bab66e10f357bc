"""Where each step of a recipe runs: a pure function of the recipe's name and the settings.

A route follows from the step *classes* a recipe lists, never from built roles: a step class
declares ``writes_skillbook`` (its queue is the write queue), ``async_boundary`` (it and what
follows run on the learn queue) and ``serves_skillbook`` (it runs the agent; serving.py), with
the defaults of :class:`~ace_workers.steps.routing.StepRouting`. The recipe function is called
with inputs that stand for the roles without being them, so a producer learns its queues
without building an Agent, an LLM client or an embedding model.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from ...steps.routing import routing_of
from ..settings import DEDUP_OFF, WorkerSettings
from .recipes import RecipeInputs, resolve_recipe

__all__ = ["Route", "recipe_routes", "routes_of"]


@dataclass(frozen=True)
class Route:
    """Where one step of a recipe runs, and what it is called in monitoring."""

    index: int
    name: str
    queue_role: str
    writes_skillbook: bool
    # Runs the agent: served the version of the sample's label, not the head's (see serving.py).
    serves_skillbook: bool = False


def routes_of(step_classes: list[type[Any]]) -> list[Route]:
    """Queue of each step: writers on "write", from the async boundary on "learn", else "execute"."""
    routings = [routing_of(cls) for cls in step_classes]
    boundary = next((i for i, r in enumerate(routings) if r.async_boundary), len(routings))
    routes = []
    for index, (cls, routing) in enumerate(zip(step_classes, routings, strict=True)):
        writes = routing.writes_skillbook
        role = "write" if writes else ("learn" if index >= boundary else "execute")
        routes.append(Route(index, cls.__name__, role, writes, routing.serves_skillbook))
    return routes


def recipe_routes(recipe: str, settings: WorkerSettings) -> list[Route]:
    """The routes of ``recipe`` under ``settings``, from its step classes alone.

    Raises:
        UnknownRecipeError: ``recipe`` is neither built in nor in ACE_RECIPES.
    """
    paths = settings.recipe_paths()
    path = paths.get(recipe) if isinstance(recipe, str) else None
    return list(_routes(recipe, path, settings.dedup_provider != DEDUP_OFF))


@functools.lru_cache(maxsize=256)
def _routes(recipe: str, path: str | None, dedup: bool) -> tuple[Route, ...]:
    """Cached by what decides the step list: the recipe, its configured import path, dedup on or off."""
    make_steps = resolve_recipe(recipe, {recipe: path} if path is not None else {})
    role = _Unbuilt()
    inputs = RecipeInputs(
        agent=role,  # type: ignore[arg-type]  # stands for a role; a recipe only passes it on
        reflector=role,  # type: ignore[arg-type]
        skill_manager=role,  # type: ignore[arg-type]
        skillbook=role,  # type: ignore[arg-type]
        deduplicator=role if dedup else None,  # type: ignore[arg-type]
    )
    return tuple(routes_of([type(step) for step in make_steps(inputs)]))


class _Unbuilt:
    """What a recipe gets for its roles when only its step classes are wanted: nothing to call."""

    def __repr__(self) -> str:
        return "<role not built: routing only>"
