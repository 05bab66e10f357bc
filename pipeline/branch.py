"""Branch: run several pipelines on the same context in parallel, then merge their outputs.

This module does not import :mod:`.pipeline`: ``Pipeline.branch`` builds a Branch, so
pipeline.py imports this one. A child is any step (a Pipeline is one), called through
its :class:`StepInfo` exactly as a Pipeline calls its own steps.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
from collections.abc import Callable, Sequence
from enum import Enum
from typing import Any, Generic

from .context import StepContext
from .errors import BranchError, PipelineConfigError
from .pools import WorkerPool
from .protocol import CtxT
from .stepinfo import StepInfo

__all__ = ["Branch", "MergeStrategy"]

# A built-in merge sees the context the branches started from; a user's merge sees only outputs.
_Merge = Callable[[StepContext, list[StepContext]], StepContext]


class MergeStrategy(str, Enum):
    """How a Branch combines the contexts its children return."""

    RAISE_ON_CONFLICT = "raise_on_conflict"
    """Take each field a child changed; two children setting different values is a ValueError."""
    LAST_WRITE_WINS = "last_write_wins"
    """Take each field a child changed; the later child (by position) wins."""
    NAMESPACED = "namespaced"
    """Keep the input's fields; put child i's output context in ``metadata["branch_i"]``."""


def _changes(base: StepContext, out: StepContext) -> dict[str, Any]:
    # A field a child did not touch is the very same object as in the base context.
    return {
        f.name: getattr(out, f.name)
        for f in dataclasses.fields(out)
        if f.name != "metadata" and getattr(out, f.name) is not getattr(base, f.name, None)
    }


def _same(a: object, b: object) -> bool:
    if a is b:
        return True
    try:
        return bool(a == b)
    except Exception:  # e.g. arrays whose == has no single truth value
        return False


def _union_metadata(base: StepContext, outputs: list[StepContext]) -> dict[str, Any]:
    merged = dict(base.metadata)
    for out in outputs:
        merged.update(out.metadata)
    return merged


def _raise_on_conflict(base: StepContext, outputs: list[StepContext]) -> StepContext:
    merged: dict[str, Any] = {}
    writer: dict[str, int] = {}
    for index, out in enumerate(outputs):
        for name, value in _changes(base, out).items():
            if name in merged and not _same(merged[name], value):
                raise ValueError(
                    f"Branch merge conflict on field {name!r}: branch {writer[name]} and "
                    f"branch {index} produced different values; use another MergeStrategy "
                    "or make the branches write different fields"
                )
            merged.setdefault(name, value)
            writer.setdefault(name, index)
    return base.replace(**merged, metadata=_union_metadata(base, outputs))


def _last_write_wins(base: StepContext, outputs: list[StepContext]) -> StepContext:
    merged: dict[str, Any] = {}
    for out in outputs:
        merged.update(_changes(base, out))
    return base.replace(**merged, metadata=_union_metadata(base, outputs))


def _namespaced(base: StepContext, outputs: list[StepContext]) -> StepContext:
    metadata = dict(base.metadata)
    metadata.update({f"branch_{index}": out for index, out in enumerate(outputs)})
    return base.replace(metadata=metadata)


_BUILT_IN_MERGES: dict[MergeStrategy, _Merge] = {
    MergeStrategy.RAISE_ON_CONFLICT: _raise_on_conflict,
    MergeStrategy.LAST_WRITE_WINS: _last_write_wins,
    MergeStrategy.NAMESPACED: _namespaced,
}


def _resolve_merge(merge: MergeStrategy | Callable[[list[Any]], Any]) -> _Merge:
    if isinstance(merge, MergeStrategy):
        return _BUILT_IN_MERGES[merge]
    if callable(merge):
        user_merge = merge
        return lambda _base, outputs: user_merge(outputs)
    raise TypeError(f"merge must be a MergeStrategy or a callable(list_of_ctx) -> ctx, got {merge!r}")


class Branch(Generic[CtxT]):
    """A step that runs child pipelines in parallel on one context and merges the results.

    Every child runs to completion even when another fails; if any failed, the
    Branch raises :class:`BranchError` carrying every failure in child order.
    Children may not contain an ``async_boundary`` step.
    """

    async_boundary: bool = False
    max_workers: int = 1
    _engine_container = True

    def __init__(
        self,
        *pipelines: Any,
        merge: MergeStrategy | Callable[[list[Any]], Any] = MergeStrategy.RAISE_ON_CONFLICT,
    ) -> None:
        if not pipelines:
            raise ValueError("Branch needs at least one child pipeline")
        infos = [StepInfo.of(child) for child in pipelines]
        for index, info in enumerate(infos):
            if info.async_boundary or (info.is_container and info.step.contains_boundary()):
                raise PipelineConfigError(
                    f"Branch child {index} ({info.step!r}) contains an async_boundary step; "
                    "a boundary can only be a top-level step of the outer pipeline"
                )
        self.children: Sequence[Any] = tuple(pipelines)
        self._child_infos = infos
        self.requires = frozenset().union(*(info.requires for info in infos))
        self.provides = frozenset().union(*(info.provides for info in infos))
        self._merge = _resolve_merge(merge)
        self._pool: WorkerPool | None = None

    def contains_boundary(self) -> bool:
        """Always False: construction rejects children with a boundary."""
        return False

    def __repr__(self) -> str:
        return f"Branch({', '.join(map(repr, self.children))})"

    def __call__(self, ctx: CtxT) -> CtxT:
        """Run the children in parallel threads (the first in this one) and merge."""
        first, rest = self._child_infos[0], self._child_infos[1:]
        if rest and self._pool is None:
            self._pool = WorkerPool(len(rest), "pipeline-branch")
        futures = (
            [self._pool.submit(contextvars.copy_context().run, child.call, ctx) for child in rest]
            if self._pool
            else []
        )
        outcomes: list[Any] = []
        try:
            outcomes.append(first.call(ctx))
        except Exception as exc:
            outcomes.append(exc)
        for future in futures:
            try:
                outcomes.append(future.result())
            except Exception as exc:
                outcomes.append(exc)
        return self._combine(ctx, outcomes)

    async def acall(self, ctx: CtxT) -> CtxT:
        """Run the children concurrently on the event loop and merge."""
        outcomes = await asyncio.gather(
            *(child.acall(ctx) for child in self._child_infos), return_exceptions=True
        )
        return self._combine(ctx, list(outcomes))

    def _combine(self, ctx: CtxT, outcomes: list[Any]) -> CtxT:
        failures = [o for o in outcomes if isinstance(o, BaseException)]
        if failures:
            raise BranchError(failures)
        return self._merge(ctx, outcomes)  # type: ignore[return-value]
