"""Custom recipes used by the distributed tests, configured on the test workers by name (ACE_RECIPES)."""

from __future__ import annotations

import sys
import threading
from typing import Any

from ace_workers.core import ACEStepContext
from ace_workers.distributed.worker.recipes import RecipeInputs
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


class Flaky:
    """A learning step whose LLM call fails with LLMError the first two times per sample."""

    requires = frozenset({"trace"})
    provides: frozenset[str] = frozenset()
    async_boundary = True
    fail_times = 2

    def __call__(self, ctx: ACEStepContext) -> ACEStepContext:
        import redis

        from ace_workers.errors import LLMError

        client = redis.Redis.from_url(ctx.trace["redis_url"])  # type: ignore[index]
        attempts = int(client.incr(f"flaky:{ctx.trace['id']}"))  # type: ignore[index]
        client.close()
        if attempts <= self.fail_times:
            raise LLMError(f"rate limited (attempt {attempts})")
        return ctx


class AlwaysRateLimited(Flaky):
    """Never gets through."""

    fail_times = 1_000


def flaky_recipe(inputs: RecipeInputs) -> list[Any]:
    """Just the flaky step."""
    return [Flaky()]


def rate_limited_recipe(inputs: RecipeInputs) -> list[Any]:
    """Just the step that never gets through."""
    return [AlwaysRateLimited()]


class Choosy:
    """A learning step that fails the samples whose trace says ``"fail": true``, until healed.

    Healed once the key ``choosy:healed`` exists in the trace's ``redis_url``: a retried
    sample then goes through.
    """

    requires = frozenset({"trace"})
    provides: frozenset[str] = frozenset()
    async_boundary = True

    def __call__(self, ctx: ACEStepContext) -> ACEStepContext:
        import redis

        trace: Any = ctx.trace
        if trace.get("fail"):
            client = redis.Redis.from_url(trace["redis_url"])
            healed = client.exists(CHOOSY_HEALED)
            client.close()
            if not healed:
                raise RuntimeError(f"sample {trace['id']} fails on purpose")
        return ctx


CHOOSY_HEALED = "choosy:healed"


def choosy_traces(redis_url: str, count: int, failing: set[int]) -> list[dict[str, Any]]:
    """``count`` traces for the choosy recipe (ids s1..sN); those in ``failing`` fail until healed."""
    return [
        {
            "id": f"s{index}",
            "redis_url": redis_url,
            "fail": index in failing,
            "question": f"What is {index} + {index}?",
            "answer": "no idea",
            "ground_truth": str(2 * index),
            "feedback": "Incorrect.",
        }
        for index in range(1, count + 1)
    ]


def choosy_recipe(inputs: RecipeInputs) -> list[Any]:
    """Choosy, then the usual learning tail (so a sample also has steps on the write queue)."""
    tail = learning_tail(inputs.reflector, inputs.skill_manager, inputs.skillbook)
    for step in tail:
        step.async_boundary = False  # type: ignore[attr-defined]
    return [Choosy(), *tail]


MEETING = threading.Barrier(2, timeout=10)


class Meet:
    """A learning step declared max_workers=1 that completes only when two samples are in it at once."""

    requires = frozenset({"trace"})
    provides: frozenset[str] = frozenset()
    async_boundary = True
    max_workers = 1

    def __call__(self, ctx: ACEStepContext) -> ACEStepContext:
        MEETING.wait()
        return ctx


def meeting_recipe(inputs: RecipeInputs) -> list[Any]:
    """Just the meeting step."""
    return [Meet()]


class ExitProcess:
    """A learning step that calls sys.exit, as a hostile or broken recipe might."""

    requires = frozenset({"trace"})
    provides: frozenset[str] = frozenset()
    async_boundary = True

    def __call__(self, ctx: ACEStepContext) -> ACEStepContext:
        sys.exit("a step asked the process to exit")


def system_exit_recipe(inputs: RecipeInputs) -> list[Any]:
    """ExitProcess, then the usual learning tail (never reached)."""
    tail = learning_tail(inputs.reflector, inputs.skill_manager, inputs.skillbook)
    for step in tail:
        step.async_boundary = False  # type: ignore[attr-defined]
    return [ExitProcess(), *tail]


class RaiseBase:
    """A learning step that raises a BaseException of its own accord (nobody asked the worker to stop)."""

    requires = frozenset({"trace"})
    provides: frozenset[str] = frozenset()
    async_boundary = True

    def __init__(self, error: type[BaseException]) -> None:
        self.error = error

    def __call__(self, ctx: ACEStepContext) -> ACEStepContext:
        raise self.error(f"{self.error.__name__} raised by a step on purpose")


# The BaseExceptions a step may raise that Celery would not acknowledge, fail, and move past.
RAISED_BY_STEPS: dict[str, type[BaseException]] = {
    "MemoryError": MemoryError,
    "KeyboardInterrupt": KeyboardInterrupt,
    "SystemExit": SystemExit,
    "GeneratorExit": GeneratorExit,
}


def raising_recipe(error: str) -> Any:
    """The recipe whose only step raises RAISED_BY_STEPS[error]; its name is ``raises_<error>``."""

    def recipe(inputs: RecipeInputs) -> list[Any]:
        return [RaiseBase(RAISED_BY_STEPS[error])]

    return recipe


raises_MemoryError = raising_recipe("MemoryError")
raises_KeyboardInterrupt = raising_recipe("KeyboardInterrupt")
raises_SystemExit = raising_recipe("SystemExit")
raises_GeneratorExit = raising_recipe("GeneratorExit")


class PeekingWriter:
    """A skillbook writer that reads the view its context carries: the skills it saw go in its metadata."""

    requires = frozenset({"trace"})
    provides: frozenset[str] = frozenset()
    writes_skillbook = True

    def __call__(self, ctx: ACEStepContext) -> ACEStepContext:
        assert ctx.skillbook is not None
        seen = sorted(skill.content for skill in ctx.skillbook.skills())
        return ctx.replace(metadata={**ctx.metadata, "seen": seen})


def peeking_writer_recipe(inputs: RecipeInputs) -> list[Any]:
    """Just the writer that reads its view."""
    return [PeekingWriter()]


# ACE_RECIPES of the tests' workers and producers: a message names a recipe, never an import path.
TEST_RECIPES = ",".join(
    [
        "failing=tests.support.recipes:failing_recipe",
        "choosy=tests.support.recipes:choosy_recipe",
        "flaky=tests.support.recipes:flaky_recipe",
        "rate_limited=tests.support.recipes:rate_limited_recipe",
        "meeting=tests.support.recipes:meeting_recipe",
        "system_exit=tests.support.recipes:system_exit_recipe",
        "peeking_writer=tests.support.recipes:peeking_writer_recipe",
        "chatty=tests.support.observability_recipes:chatty_recipe",
        *(f"raises_{name}=tests.support.recipes:raises_{name}" for name in RAISED_BY_STEPS),
    ]
)
