"""Recipes of the drills' worker processes, configured by name (``harness.DRILL_RECIPES``).

``held_trace_analyser`` is TraceAnalyser's recipe whose Reflect and Apply steps can be
made to hold still once, so a drill kills a worker at a known point instead of racing a
step that takes milliseconds: Reflect holds before its LLM call (nothing written yet),
Apply holds after its write committed and before the task is acknowledged (the case a
redelivery must not apply twice). A drill arms a hold by setting ``arm_key(step)``; the
first call of that step to delete the key holds, sets ``holding_key(step)`` and sleeps.
"""

from __future__ import annotations

import os
import time
from typing import Any

import redis

from ace_workers.core import ACEStepContext
from ace_workers.distributed.worker.recipes import RecipeInputs
from ace_workers.steps import ApplyStep, ReflectStep, learning_tail

HOLD_SECONDS = 60.0  # longer than any drill waits: the held worker is killed, never released


def arm_key(step: str) -> str:
    """The key a drill sets to make the next call of ``step`` hold."""
    return f"drill:arm:{step}"


def holding_key(step: str) -> str:
    """The key a holding step sets (to its process id) once it holds."""
    return f"drill:holding:{step}"


def _hold_if_armed(step: str) -> None:
    client = redis.Redis.from_url(os.environ["ACE_REDIS_URL"])
    try:
        if not client.delete(arm_key(step)):
            return
        client.set(holding_key(step), os.getpid())
    finally:
        client.close()
    time.sleep(HOLD_SECONDS)


class HeldReflect(ReflectStep):
    """ReflectStep that holds before reflecting when armed."""

    def __call__(self, ctx: ACEStepContext) -> ACEStepContext:
        _hold_if_armed("ReflectStep")
        return super().__call__(ctx)


class HeldApply(ApplyStep):
    """ApplyStep that holds after its write committed when armed."""

    def __call__(self, ctx: ACEStepContext) -> ACEStepContext:
        out = super().__call__(ctx)
        _hold_if_armed("ApplyStep")
        return out


def held_trace_analyser(inputs: RecipeInputs) -> list[Any]:
    """Reflect -> Tag -> Update -> Apply, with Reflect and Apply able to hold once."""
    steps = learning_tail(inputs.reflector, inputs.skill_manager, inputs.skillbook)
    held = {ReflectStep: HeldReflect, ApplyStep: HeldApply}
    for step in steps:
        # Same state, a subclass that can hold: the step keeps its queue and its writes_skillbook flag.
        step.__class__ = held.get(type(step), type(step))
    return steps


class Echo:
    """A learning step that calls no LLM: what a worker runs to show it is healthy."""

    requires = frozenset({"trace"})
    provides: frozenset[str] = frozenset()
    async_boundary = True

    def __call__(self, ctx: ACEStepContext) -> ACEStepContext:
        return ctx


def echo_recipe(inputs: RecipeInputs) -> list[Any]:
    """Just the echo step."""
    return [Echo()]
