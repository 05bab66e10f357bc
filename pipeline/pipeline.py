"""The Pipeline: an ordered, validated sequence of steps, and the runner for many samples."""

from __future__ import annotations

import asyncio
import contextvars
import warnings
from collections import deque
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Iterator
from typing import Any, Generic, cast

from .background import BackgroundTail
from .branch import Branch, MergeStrategy
from .cancellation import CancellationToken
from .context import StepContext
from .errors import PipelineConfigError, PipelineOrderError
from .execute import Outcome, arun_steps, cause_of, run_steps
from .hooks import PipelineHook, call_hooks
from .pools import WorkerPool
from .protocol import CtxT, SampleResult
from .stepinfo import StepInfo

__all__ = ["Pipeline"]

DEFAULT_MAX_BACKGROUND = 256
IN_FLIGHT_PER_WORKER = 4


def _check_workers(workers: int) -> None:
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be an int of at least 1, got {workers!r}")


def _in_flight_limit(max_in_flight: int | None, workers: int) -> int:
    if max_in_flight is None:
        return IN_FLIGHT_PER_WORKER * workers
    if isinstance(max_in_flight, bool) or not isinstance(max_in_flight, int) or max_in_flight < workers:
        raise ValueError(
            f"max_in_flight must be an int of at least workers ({workers}), got {max_in_flight!r}"
        )
    return max_in_flight


def _raise_on_failure(outcome: Outcome) -> StepContext | None:
    out, error, failed_at = outcome
    if error is not None:
        error.add_note(f"raised by step {failed_at} of a nested Pipeline")
        raise error
    return out


def _not_a_context(item: object, index: int) -> SampleResult[Any]:
    error = TypeError(
        f"input #{index} is a {type(item).__name__}, not a StepContext; "
        "build one context per sample before calling run()"
    )
    return SampleResult(sample=item, output=None, error=error, failed_at=None)


class Pipeline(Generic[CtxT]):
    """An ordered list of steps whose field contracts are checked at construction.

    A Pipeline is itself a step (it has ``requires``, ``provides`` and
    ``__call__``), so pipelines nest. ``run()`` processes many samples: steps
    before an ``async_boundary`` step run in the caller's thread (or ``workers``
    foreground threads); the boundary step and everything after it run in the
    background on per-step-class pools.

    Args:
        steps: the steps, in order.
        hooks: observers called around every step (see :class:`PipelineHook`).
        max_background: how many samples may be in the background at once before
            the foreground waits for one to finish.
        exit_timeout: at interpreter exit, how long to wait for pending background
            samples (None: until they finish) before logging how many were abandoned.
    """

    async_boundary: bool = False
    max_workers: int = 1
    _engine_container = True

    def __init__(
        self,
        steps: Iterable[Any] = (),
        *,
        hooks: Iterable[PipelineHook] = (),
        max_background: int = DEFAULT_MAX_BACKGROUND,
        exit_timeout: float | None = None,
    ) -> None:
        if isinstance(max_background, bool) or not isinstance(max_background, int) or max_background < 1:
            raise ValueError(f"max_background must be an int of at least 1, got {max_background!r}")
        self.hooks: list[PipelineHook] = list(hooks)
        self.max_background = max_background
        self.exit_timeout = exit_timeout
        self._steps: list[StepInfo] = []
        self._foreground: list[StepInfo] = []
        self._tail: list[StepInfo] = []
        self.requires: frozenset[str] = frozenset()
        self.provides: frozenset[str] = frozenset()
        self._background = BackgroundTail(repr(self), self.hooks, max_background, exit_timeout)
        self._set_steps([StepInfo.of(step) for step in steps])

    # -- construction -------------------------------------------------------------
    def then(self, step: Any) -> Pipeline[CtxT]:
        """Append ``step`` (validated at once) and return this pipeline."""
        self._set_steps([*self._steps, StepInfo.of(step)])
        return self

    def branch(
        self,
        *pipelines: Any,
        merge: MergeStrategy | Callable[[list[Any]], Any] = MergeStrategy.RAISE_ON_CONFLICT,
    ) -> Pipeline[CtxT]:
        """Append a :class:`Branch` of ``pipelines``, run in parallel and merged by ``merge``; return self."""
        return self.then(Branch(*pipelines, merge=merge))

    @property
    def steps(self) -> tuple[Any, ...]:
        """The steps, in order."""
        return tuple(info.step for info in self._steps)

    def contains_boundary(self) -> bool:
        """True if any step, at any nesting depth, declares ``async_boundary``."""
        return any(
            info.async_boundary or (info.is_container and info.step.contains_boundary())
            for info in self._steps
        )

    def _set_steps(self, steps: list[StepInfo]) -> None:
        # Validate everything before changing anything: a rejected then() leaves the pipeline as it was.
        requires, provides = _infer_contracts(steps)
        boundary = _boundary_index(steps)
        self._steps = steps
        self.requires, self.provides = requires, provides
        split = len(steps) if boundary is None else boundary
        self._foreground, self._tail = steps[:split], steps[split:]
        self._background.owner = repr(self)

    def __repr__(self) -> str:
        return f"Pipeline([{', '.join(info.name for info in self._steps)}])"

    # -- one context (a Pipeline used as a step) ----------------------------------
    def __call__(self, ctx: CtxT) -> CtxT:
        """Run every step in order on ``ctx`` in this thread (a nested boundary is ignored)."""
        return cast(CtxT, _raise_on_failure(run_steps(self._steps, ctx, None, self.hooks)))

    async def acall(self, ctx: CtxT) -> CtxT:
        """Async form of ``__call__``: async steps are awaited, sync steps run in threads."""
        return cast(CtxT, _raise_on_failure(await arun_steps(self._steps, ctx, None, self.hooks)))

    # -- many samples --------------------------------------------------------------
    def run(
        self,
        contexts: Iterable[CtxT],
        workers: int = 1,
        *,
        max_in_flight: int | None = None,
        cancel_token: CancellationToken | None = None,
    ) -> list[SampleResult[CtxT]]:
        """Run every context and return one SampleResult per input, in input order.

        Failures never raise: they are recorded in the sample's result. Samples
        with a background tail come back with ``done=False``; call
        :meth:`wait_for_background` before reading their final output.
        From async code, prefer ``await run_async(...)``; ``run`` also works in
        an executor thread (``await asyncio.to_thread(pipeline.run, contexts)``).
        """
        return list(self.stream(contexts, workers, max_in_flight=max_in_flight, cancel_token=cancel_token))

    def stream(
        self,
        contexts: Iterable[CtxT],
        workers: int = 1,
        *,
        max_in_flight: int | None = None,
        cancel_token: CancellationToken | None = None,
    ) -> Iterator[SampleResult[CtxT]]:
        """Like :meth:`run`, but yield results in input order as they are ready.

        The input is consumed lazily: at most ``max_in_flight`` samples (default
        4 x workers) are taken from it ahead of the result being yielded.
        """
        _check_workers(workers)
        limit = _in_flight_limit(max_in_flight, workers)
        if workers == 1:
            return self._stream_inline(contexts, cancel_token)
        return self._stream_threaded(contexts, workers, limit, cancel_token)

    def _stream_inline(
        self, contexts: Iterable[CtxT], token: CancellationToken | None
    ) -> Iterator[SampleResult[CtxT]]:
        for index, ctx in enumerate(contexts):
            # Each sample in a context of its own: what its hooks and steps set stays with it.
            yield contextvars.copy_context().run(self._process, ctx, index, token)

    def _stream_threaded(
        self, contexts: Iterable[CtxT], workers: int, limit: int, token: CancellationToken | None
    ) -> Iterator[SampleResult[CtxT]]:
        pool = WorkerPool(workers, "pipeline-foreground")
        window: deque[Any] = deque()
        try:
            for index, ctx in enumerate(contexts):
                # Copied here, in the caller's thread: the sample sees the caller's context.
                window.append(pool.submit(contextvars.copy_context().run, self._process, ctx, index, token))
                if len(window) >= limit:
                    yield window.popleft().result()
            while window:
                yield window.popleft().result()
        finally:
            for future in window:  # the consumer stopped early: do not start the rest
                future.cancel()
            pool.shutdown()

    def _process(self, ctx: object, index: int, token: CancellationToken | None) -> SampleResult[CtxT]:
        if not isinstance(ctx, StepContext):
            return _not_a_context(ctx, index)
        if self.hooks:
            call_hooks(self.hooks, "before_sample", ctx)
        return self._after_foreground(ctx, run_steps(self._foreground, ctx, token, self.hooks), token)

    def _after_foreground(
        self, ctx: StepContext, outcome: Outcome, token: CancellationToken | None, reserved: bool = False
    ) -> SampleResult[CtxT]:
        out, error, failed_at = outcome
        if error is not None:
            failed: SampleResult[CtxT] = SampleResult(ctx.sample, None, error, failed_at, cause_of(error))
            return self._finished(failed)
        result: SampleResult[CtxT] = SampleResult(ctx.sample, out, None, None)  # type: ignore[arg-type]
        if not self._tail:
            return self._finished(result)
        if not reserved:
            self._background.reserve()
        result.done = False
        self._background.start(self._tail, result, out, token)  # type: ignore[arg-type]
        return result

    def _finished(self, result: SampleResult[CtxT]) -> SampleResult[CtxT]:
        """A sample that ends in the foreground: tell the hooks."""
        if self.hooks:
            call_hooks(self.hooks, "after_sample", result)
        return result

    async def run_async(
        self,
        contexts: Iterable[CtxT] | AsyncIterable[CtxT],
        workers: int = 1,
        *,
        max_in_flight: int | None = None,
        cancel_token: CancellationToken | None = None,
    ) -> list[SampleResult[CtxT]]:
        """Awaitable form of :meth:`run`; also accepts an async iterable of contexts."""
        stream = self.astream(contexts, workers, max_in_flight=max_in_flight, cancel_token=cancel_token)
        return [result async for result in stream]

    def astream(
        self,
        contexts: Iterable[CtxT] | AsyncIterable[CtxT],
        workers: int = 1,
        *,
        max_in_flight: int | None = None,
        cancel_token: CancellationToken | None = None,
    ) -> AsyncIterator[SampleResult[CtxT]]:
        """Async form of :meth:`stream`: up to ``workers`` samples run concurrently on the loop."""
        _check_workers(workers)
        return self._astream(contexts, workers, _in_flight_limit(max_in_flight, workers), cancel_token)

    async def _astream(
        self,
        contexts: Iterable[CtxT] | AsyncIterable[CtxT],
        workers: int,
        limit: int,
        token: CancellationToken | None,
    ) -> AsyncIterator[SampleResult[CtxT]]:
        slots = asyncio.Semaphore(workers)
        window: deque[asyncio.Task[SampleResult[CtxT]]] = deque()

        async def process(ctx: CtxT, index: int) -> SampleResult[CtxT]:
            async with slots:
                return await self._aprocess(ctx, index, token)

        try:
            index = 0
            async for ctx in _aiterate(contexts):
                window.append(asyncio.ensure_future(process(ctx, index)))
                index += 1
                if len(window) >= limit:
                    yield await window.popleft()
            while window:
                yield await window.popleft()
        finally:
            for task in window:
                task.cancel()

    async def _aprocess(self, ctx: object, index: int, token: CancellationToken | None) -> SampleResult[CtxT]:
        if not isinstance(ctx, StepContext):
            return _not_a_context(ctx, index)
        if self.hooks:
            call_hooks(self.hooks, "before_sample", ctx)
        outcome = await arun_steps(self._foreground, ctx, token, self.hooks)
        if outcome[1] is None and self._tail:
            if not self._background.try_reserve():  # backlog full: wait without blocking the loop
                await asyncio.to_thread(self._background.reserve)
            return self._after_foreground(ctx, outcome, token, reserved=True)
        return self._after_foreground(ctx, outcome, token)

    # -- background ----------------------------------------------------------------
    def wait_for_background(self, timeout: float | None = None) -> None:
        """Block until every background tail has finished; TimeoutError after ``timeout`` s."""
        self._background.wait(timeout)

    def background_stats(self) -> dict[str, int]:
        """``{"active", "completed", "failed", "max_backlog"}`` counts of background samples."""
        return self._background.stats()


async def _aiterate(contexts: Iterable[CtxT] | AsyncIterable[CtxT]) -> AsyncIterator[CtxT]:
    if isinstance(contexts, AsyncIterable):
        async for ctx in contexts:
            yield ctx
    else:
        for ctx in contexts:
            yield ctx


def _infer_contracts(steps: list[StepInfo]) -> tuple[frozenset[str], frozenset[str]]:
    """Fields needed from outside, and fields provided; raise on a field provided too late.

    A field that no earlier step provides is an external input, unless the
    first later step that provides it is its producer: then the order is
    wrong. If that later step also requires the field, it is a transform of
    an external input, and so is every read before it.
    """
    provided: set[str] = set()
    external: set[str] = set()
    for position, info in enumerate(steps):
        for field in sorted(info.requires - provided):
            later = next((s for s in steps[position + 1 :] if field in s.provides), None)
            if later is not None and field not in later.requires:
                raise PipelineOrderError(field, info.name, later.name)
            external.add(field)
        provided |= info.provides
    return frozenset(external), frozenset(provided)


def _boundary_index(steps: list[StepInfo]) -> int | None:
    """Position of the one async_boundary step; warn about boundaries that will be ignored."""
    boundaries: list[int] = []
    for position, info in enumerate(steps):
        if isinstance(info.step, Pipeline):
            if info.async_boundary or info.step.contains_boundary():
                warnings.warn(
                    f"step {position} is a nested Pipeline with an async_boundary; "
                    "a nested Pipeline runs all its steps in sequence and the boundary is ignored",
                    UserWarning,
                    stacklevel=4,
                )
        elif info.async_boundary:
            boundaries.append(position)
    if len(boundaries) > 1:
        names = ", ".join(f"{steps[i].name} (step {i})" for i in boundaries)
        raise PipelineConfigError(f"a pipeline can have only one async_boundary step, found: {names}")
    return boundaries[0] if boundaries else None
