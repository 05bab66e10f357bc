"""What a step is, and what a pipeline returns for each sample."""

from __future__ import annotations

from collections.abc import Awaitable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

from .context import StepContext

__all__ = ["CtxT", "SampleResult", "StepProtocol"]

CtxT = TypeVar("CtxT", bound=StepContext)


@runtime_checkable
class StepProtocol(Protocol[CtxT]):
    """One unit of work: reads ``requires`` fields, returns a context with ``provides``.

    ``__call__`` may be a plain function or ``async def``. Three optional class
    attributes steer scheduling: ``async_boundary = True`` marks the step where
    background execution starts; ``max_workers`` (default 1) sizes the step
    class's background pool, so it caps that class's calls in the background
    and not in the foreground, where ``run(workers=...)`` alone decides; and
    ``exclusive = True`` means calls of the class never overlap anywhere, for
    steps that write shared state (a skillbook, a file).
    """

    @property
    def requires(self) -> AbstractSet[str]:
        """Context fields this step reads."""
        ...

    @property
    def provides(self) -> AbstractSet[str]:
        """Context fields this step writes."""
        ...

    def __call__(self, ctx: CtxT) -> CtxT | Awaitable[CtxT]:
        """Process one sample's context and return the next context."""
        ...


@dataclass
class SampleResult(Generic[CtxT]):
    """The outcome of one input: the final context, or the error and where it happened.

    ``failed_at`` is the class name of the step that raised (``"Branch"`` for a
    branch, whose first inner exception is then in ``cause``). While a
    background tail is still running, ``done`` is False and ``output`` holds
    the context as the foreground left it; the engine fills in the rest.
    """

    sample: Any
    output: CtxT | None
    error: Exception | None
    failed_at: str | None
    cause: Exception | None = None
    done: bool = field(default=True, compare=False)

    @property
    def ok(self) -> bool:
        """True when the sample went through every step without error."""
        return self.error is None
