"""Recipes of the observability tests (imported by workers by path, in-process and in subprocesses)."""

from __future__ import annotations

import logging
from typing import Any

from ace_workers.core import ACEStepContext
from ace_workers.distributed.worker.recipes import RecipeInputs

# A logger of its own, as a role's or the store's would be: the step fields must reach it too.
logger = logging.getLogger("tests.observability.chatty")
logger.setLevel(logging.INFO)


class Chatty:
    """A learning step that logs one line naming its trace, and passes the context on."""

    requires = frozenset({"trace"})
    provides: frozenset[str] = frozenset()
    async_boundary = True

    def __call__(self, ctx: ACEStepContext) -> ACEStepContext:
        logger.info("looked at trace %s", ctx.trace["id"])  # type: ignore[index]
        return ctx


def chatty_recipe(inputs: RecipeInputs) -> list[Any]:
    """Just the chatty step."""
    return [Chatty()]
