"""The background tail: steps from the async boundary on, run on per-class pools.

Each sample's tail hops from pool to pool: the thread that finishes step i
hands the sample to the pool of step i+1, so a step class's pool size (its
``max_workers``) is exactly how many of its calls run at once. The number of
samples in the background is bounded; when the bound is reached the
foreground waits (back-pressure) instead of queueing without limit.
"""

from __future__ import annotations

import atexit
import contextvars
import logging
import threading
import weakref
from typing import Any

from .cancellation import CancellationToken
from .context import StepContext
from .execute import cause_of
from .hooks import PipelineHook, call_hooks
from .pools import pool_for
from .protocol import SampleResult
from .stepinfo import StepInfo

__all__ = ["BackgroundTail"]

logger = logging.getLogger(__name__)

_live_tails: weakref.WeakSet[BackgroundTail] = weakref.WeakSet()


class BackgroundTail:
    """Runs one pipeline's tail steps in the background and tracks their progress."""

    def __init__(
        self,
        owner: str,
        hooks: list[PipelineHook],
        max_backlog: int,
        exit_timeout: float | None,
    ) -> None:
        self.owner = owner
        self.hooks = hooks
        self.max_backlog = max_backlog
        self.exit_timeout = exit_timeout
        self._changed = threading.Condition()
        self._active = 0
        self._completed = 0
        self._failed = 0
        self._started_for: list[StepInfo] | None = None
        _live_tails.add(self)

    # -- admission (back-pressure) -------------------------------------------------
    def try_reserve(self) -> bool:
        """Take a backlog slot if one is free right now."""
        with self._changed:
            if self._active >= self.max_backlog:
                return False
            self._active += 1
            return True

    def reserve(self) -> None:
        """Take a backlog slot, waiting for one to free up if the backlog is full."""
        with self._changed:
            while self._active >= self.max_backlog:
                self._changed.wait()
            self._active += 1

    def start(
        self,
        steps: list[StepInfo],
        result: SampleResult[Any],
        ctx: StepContext,
        token: CancellationToken | None,
    ) -> None:
        """Run ``steps`` for ``result``; the caller must hold a slot from reserve()."""
        if steps is not self._started_for:
            # Start every pool of the tail now: threads cannot start once interpreter
            # shutdown begins (Python 3.12+), and the exit drain must still hand samples on.
            for info in steps:
                pool_for(type(info.step), info.max_workers).start()
            self._started_for = steps
        self._hand_to(steps, 0, result, ctx, token)

    # -- execution -------------------------------------------------------------------
    def _hand_to(
        self,
        steps: list[StepInfo],
        index: int,
        result: SampleResult[Any],
        ctx: StepContext,
        token: CancellationToken | None,
    ) -> None:
        info = steps[index]
        pool = pool_for(type(info.step), info.max_workers)
        # The step runs in a copy of the sample's context (see PipelineHook), in whatever pool thread.
        pool.submit(contextvars.copy_context().run, self._run_step, steps, index, result, ctx, token)

    def _run_step(
        self,
        steps: list[StepInfo],
        index: int,
        result: SampleResult[Any],
        ctx: StepContext,
        token: CancellationToken | None,
    ) -> None:
        info = steps[index]
        try:
            if token is not None:
                token.raise_if_cancelled(info.name)
            if self.hooks:
                call_hooks(self.hooks, "before_step", info.name, ctx)
            out = info.call(ctx)
        except BaseException as exc:
            # Nothing may escape a pool thread: the sample would never finish.
            error = exc if isinstance(exc, Exception) else RuntimeError(f"{info.name} raised {exc!r}")
            if self.hooks:
                call_hooks(self.hooks, "on_error", info.name, ctx, error)
            self._finish(result, None, error, info.name)
            return
        if self.hooks:
            call_hooks(self.hooks, "after_step", info.name, out)
        if index + 1 < len(steps):
            self._hand_to(steps, index + 1, result, out, token)
        else:
            self._finish(result, out, None, None)

    def _finish(
        self,
        result: SampleResult[Any],
        output: StepContext | None,
        error: Exception | None,
        failed_at: str | None,
    ) -> None:
        result.output = output
        result.error = error
        result.failed_at = failed_at
        result.cause = None if error is None else cause_of(error)
        if self.hooks:
            # Before done turns True: whoever waits for the background sees the hooks' work done.
            call_hooks(self.hooks, "after_sample", result)
        with self._changed:
            result.done = True
            self._active -= 1
            if error is None:
                self._completed += 1
            else:
                self._failed += 1
            self._changed.notify_all()

    # -- observation -----------------------------------------------------------------
    def wait(self, timeout: float | None = None) -> None:
        """Block until no sample is in the background; TimeoutError after ``timeout`` seconds."""
        with self._changed:
            if not self._changed.wait_for(lambda: self._active == 0, timeout):
                raise TimeoutError(
                    f"{self._active} background sample(s) of {self.owner} still running after {timeout} s"
                )

    def stats(self) -> dict[str, int]:
        """Counts of background samples: running or queued, completed, failed."""
        with self._changed:
            return {
                "active": self._active,
                "completed": self._completed,
                "failed": self._failed,
                "max_backlog": self.max_backlog,
            }


@atexit.register
def _drain_at_exit() -> None:
    # Pool threads are daemons: without this, pending learning would vanish at exit.
    for tail in list(_live_tails):
        pending = tail.stats()["active"]
        if not pending:
            continue
        logger.warning("waiting for %d background sample(s) of %s before exit", pending, tail.owner)
        try:
            tail.wait(tail.exit_timeout)
        except (TimeoutError, KeyboardInterrupt):
            logger.error(
                "abandoned %d background sample(s) of %s at exit",
                tail.stats()["active"],
                tail.owner,
            )
