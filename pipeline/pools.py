"""Worker threads, per-class pools and locks, and running coroutines from sync code.

The engine uses its own small pool instead of ``ThreadPoolExecutor`` because
executors refuse new work once interpreter shutdown starts, and a background
tail must be able to hand a sample to its next step while it is being drained
at exit.
"""

from __future__ import annotations

import _thread
import asyncio
import contextvars
import logging
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from queue import SimpleQueue
from typing import Any, TypeVar

from .errors import PipelineConfigError

__all__ = ["WorkerPool", "check_class_limit", "exclusive_lock", "pool_for", "run_awaitable"]

logger = logging.getLogger(__name__)

T = TypeVar("T")
# threading.Lock is a factory function, so the type is spelled with _thread's.
Limiter = _thread.LockType
_WorkItem = tuple["Future[Any]", Callable[..., Any], tuple[Any, ...]]


class WorkerPool:
    """A fixed number of daemon threads serving a FIFO queue of calls."""

    def __init__(self, size: int, name: str) -> None:
        if size < 1:
            raise ValueError(f"pool {name!r} needs at least one worker, got {size}")
        self.size = size
        self.name = name
        self._queue: SimpleQueue[_WorkItem | None] = SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._start_lock = threading.Lock()

    def submit(self, fn: Callable[..., T], *args: Any) -> Future[T]:
        """Queue ``fn(*args)``; the returned future carries its result or exception."""
        future: Future[T] = Future()
        self._queue.put((future, fn, args))
        if not self._threads:
            self._start()
        return future

    def start(self) -> None:
        """Start the threads now rather than on the first submit."""
        if not self._threads:
            self._start()

    def shutdown(self) -> None:
        """Let the threads finish the queued calls, then exit."""
        for _ in self._threads:
            self._queue.put(None)

    def _start(self) -> None:
        with self._start_lock:
            while len(self._threads) < self.size:
                thread = threading.Thread(
                    target=self._work, name=f"{self.name}-{len(self._threads)}", daemon=True
                )
                thread.start()
                self._threads.append(thread)

    def _work(self) -> None:
        while (item := self._queue.get()) is not None:
            future, fn, args = item
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn(*args))
            except BaseException as exc:  # the future carries it to whoever waits
                future.set_exception(exc)


_registry_lock = threading.Lock()
_step_pools: dict[type, WorkerPool] = {}
_class_limits: dict[type, int] = {}
_exclusive_locks: dict[type, Limiter] = {}


def check_class_limit(cls: type, max_workers: int) -> None:
    """Refuse a ``max_workers`` that differs from an earlier instance's: the pool is per class."""
    with _registry_lock:
        size = _class_limits.setdefault(cls, max_workers)
    if size != max_workers:
        raise PipelineConfigError(
            f"step class {cls.__qualname__} is used with max_workers={max_workers}, but an "
            f"earlier instance declared max_workers={size}; max_workers sizes one background "
            "pool per class, so set it on the class"
        )


def exclusive_lock(cls: type) -> Limiter:
    """The process-wide lock that keeps calls of an ``exclusive`` step class from overlapping."""
    with _registry_lock:
        return _exclusive_locks.setdefault(cls, threading.Lock())


def pool_for(cls: type, max_workers: int) -> WorkerPool:
    """The process-wide background pool of step class ``cls``, created on first use."""
    pool = _step_pools.get(cls)
    if pool is None:
        with _registry_lock:
            pool = _step_pools.get(cls)
            if pool is None:
                pool = WorkerPool(max_workers, f"pipeline-{cls.__name__}")
                _step_pools[cls] = pool
    return pool


async def _await(awaitable: Awaitable[T]) -> T:
    return await awaitable


def run_awaitable(awaitable: Awaitable[T]) -> T:
    """Run an awaitable to completion from synchronous code.

    With no event loop running in this thread (a plain thread, an executor
    thread of a running loop) it gets a fresh loop here. When called from a
    thread whose loop is running, blocking that loop on itself would deadlock,
    so the awaitable runs on a fresh loop in a helper thread instead.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_await(awaitable))
    box: list[Any] = []

    def run_in_helper() -> None:
        try:
            box.append((True, asyncio.run(_await(awaitable))))
        except BaseException as exc:  # re-raised in the calling thread below
            box.append((False, exc))

    helper = threading.Thread(
        target=contextvars.copy_context().run,
        args=(run_in_helper,),
        name="pipeline-async-helper",
        daemon=True,
    )
    helper.start()
    helper.join()
    ok, value = box[0]
    if ok:
        return value  # type: ignore[no-any-return]
    raise value
