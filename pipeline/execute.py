"""Running a sequence of steps over one context, recording where it failed."""

from __future__ import annotations

from .cancellation import CancellationToken
from .context import StepContext
from .errors import BranchError
from .hooks import PipelineHook, call_hooks
from .stepinfo import StepInfo

__all__ = ["Outcome", "arun_steps", "cause_of", "run_steps"]

# (final context, None, None) on success; (None, error, failing step name) otherwise.
Outcome = tuple[StepContext | None, Exception | None, str | None]


def cause_of(error: BaseException) -> Exception | None:
    """The first inner exception of a BranchError, which ``SampleResult.cause`` carries."""
    if isinstance(error, BranchError) and error.failures:
        first = error.failures[0]
        return first if isinstance(first, Exception) else None
    return None


def run_steps(
    steps: list[StepInfo],
    ctx: StepContext,
    token: CancellationToken | None,
    hooks: list[PipelineHook],
) -> Outcome:
    """Run ``steps`` in order in this thread; never raises for a step's error."""
    for info in steps:
        try:
            if token is not None:
                token.raise_if_cancelled(info.name)
            if hooks:
                call_hooks(hooks, "before_step", info.name, ctx)
            ctx = info.call(ctx)
        except Exception as exc:
            if hooks:
                call_hooks(hooks, "on_error", info.name, ctx, exc)
            return None, exc, info.name
        if hooks:
            call_hooks(hooks, "after_step", info.name, ctx)
    return ctx, None, None


async def arun_steps(
    steps: list[StepInfo],
    ctx: StepContext,
    token: CancellationToken | None,
    hooks: list[PipelineHook],
) -> Outcome:
    """The async twin of :func:`run_steps`: async steps are awaited, sync ones run in threads."""
    for info in steps:
        try:
            if token is not None:
                token.raise_if_cancelled(info.name)
            if hooks:
                call_hooks(hooks, "before_step", info.name, ctx)
            ctx = await info.acall(ctx)
        except Exception as exc:
            if hooks:
                call_hooks(hooks, "on_error", info.name, ctx, exc)
            return None, exc, info.name
        if hooks:
            call_hooks(hooks, "after_step", info.name, ctx)
    return ctx, None, None
