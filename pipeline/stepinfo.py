"""Checking a user's step once, and calling it fast and safely afterwards."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from .context import StepContext
from .errors import PipelineConfigError
from .pools import Limiter, check_class_limit, exclusive_lock, run_awaitable

__all__ = ["StepInfo", "normalise_fields"]


def normalise_fields(value: object, attribute: str, owner: object) -> frozenset[str]:
    """Turn a step's ``requires``/``provides`` into a frozenset of field names."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise TypeError(
            f"{attribute} of step {owner!r} must be a set of field names, "
            f"got {type(value).__name__} {value!r}"
        )
    fields = frozenset(value)
    bad = [name for name in fields if not isinstance(name, str)]
    if bad:
        raise TypeError(f"{attribute} of step {owner!r} holds non-string field names: {bad!r}")
    return fields


def _max_workers(step: object) -> int:
    value = getattr(step, "max_workers", 1)
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"max_workers of step {step!r} must be an int, got {value!r}")
    if value < 1:
        raise ValueError(f"max_workers of step {step!r} must be at least 1, got {value}")
    return value


def _exclusive(step: object, max_workers: int) -> bool:
    value = getattr(step, "exclusive", False)
    if not isinstance(value, bool):
        raise TypeError(f"exclusive of step {step!r} must be a bool, got {value!r}")
    if value and max_workers != 1:
        raise PipelineConfigError(
            f"step {step!r} is exclusive (its calls never overlap) but declares "
            f"max_workers={max_workers}; an exclusive step has max_workers = 1"
        )
    return value


def _is_async(step: object) -> bool:
    return inspect.iscoroutinefunction(step) or inspect.iscoroutinefunction(type(step).__call__)


@dataclass(frozen=True, slots=True, eq=False)
class StepInfo:
    """A validated step with its contract and scheduling attributes resolved."""

    step: Any
    name: str
    requires: frozenset[str]
    provides: frozenset[str]
    async_boundary: bool
    max_workers: int
    exclusive: bool
    is_async: bool
    is_container: bool
    limiter: Limiter | None
    invoke: Callable[[StepContext], Any]

    @classmethod
    def of(cls, step: Any) -> StepInfo:
        """Validate ``step``; raise TypeError/ValueError naming it when it is not a step."""
        for attribute in ("requires", "provides"):
            if not hasattr(step, attribute):
                raise TypeError(
                    f"{step!r} is not a pipeline step: it has no {attribute!r} attribute "
                    "(a step needs requires, provides and __call__(ctx) -> ctx)"
                )
        if not callable(step):
            raise TypeError(f"{step!r} is not a pipeline step: it is not callable")
        max_workers = _max_workers(step)
        exclusive = _exclusive(step, max_workers)
        # Pipeline and Branch are containers: their inner steps carry the limits.
        is_container = bool(getattr(step, "_engine_container", False))
        if not is_container:
            check_class_limit(type(step), max_workers)
        is_async = _is_async(step)
        return cls(
            step=step,
            name=type(step).__name__,
            requires=normalise_fields(step.requires, "requires", step),
            provides=normalise_fields(step.provides, "provides", step),
            async_boundary=bool(getattr(step, "async_boundary", False)),
            max_workers=max_workers,
            exclusive=exclusive,
            is_async=is_async,
            is_container=is_container,
            # max_workers sizes the background pool only; the one limit that holds
            # everywhere, foreground threads included, is an exclusive step's lock.
            limiter=exclusive_lock(type(step)) if exclusive and not is_container else None,
            # An async step called from sync code runs to completion inside its limit.
            invoke=(lambda ctx: run_awaitable(step(ctx))) if is_async else step,
        )

    def call(self, ctx: StepContext) -> StepContext:
        """Run the step synchronously (holding its class's lock if it is exclusive)."""
        limiter = self.limiter
        if limiter is None:
            out = self.invoke(ctx)
        else:
            with limiter:
                out = self.invoke(ctx)
        if type(out) is not type(ctx) and not isinstance(out, StepContext):
            out = self._resolve(out)
        return out

    async def acall(self, ctx: StepContext) -> StepContext:
        """Run the step from async code: await it, or run a sync step in a thread."""
        limiter = self.limiter
        if limiter is not None:
            await _acquire(limiter)
        try:
            if self.is_container:
                out = await self.step.acall(ctx)
            elif self.is_async:
                out = await self.step(ctx)
            else:
                out = await asyncio.to_thread(self.step, ctx)
        finally:
            if limiter is not None:
                limiter.release()
        if not isinstance(out, StepContext):
            out = self._resolve(out)
        return out

    def _resolve(self, out: object) -> StepContext:
        # A sync __call__ may still hand back an awaitable (e.g. a partial of a coroutine function).
        if inspect.isawaitable(out):
            out = run_awaitable(out)
        if not isinstance(out, StepContext):
            raise TypeError(
                f"step {self.name} returned {type(out).__name__}, not a StepContext "
                "(a step must return ctx.replace(...) or ctx)"
            )
        return out


async def _acquire(limiter: Limiter) -> None:
    if limiter.acquire(blocking=False):
        return
    waiting = asyncio.ensure_future(asyncio.to_thread(limiter.acquire))
    try:
        await asyncio.shield(waiting)
    except asyncio.CancelledError:
        # The thread still takes the slot; hand it back once it has.
        waiting.add_done_callback(lambda _: limiter.release())
        raise
