"""The pipeline engine tests' small domain context and a step builder."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pipeline import StepContext


@dataclass(frozen=True)
class Ctx(StepContext):
    """A small domain context: a few fields steps can read and write."""

    x: int = 0
    y: int | None = None
    z: int | None = None
    trail: tuple[str, ...] = ()


def make_step(
    name: str,
    requires: set[str] | frozenset[str] = frozenset(),
    provides: set[str] | frozenset[str] = frozenset(),
    fn: Callable[[Any], Any] | None = None,
    **class_attrs: Any,
) -> Any:
    """Build an instance of a fresh step class called ``name``.

    ``fn(ctx) -> ctx`` is the body (default: append ``name`` to ``ctx.trail``).
    Extra keyword arguments become class attributes (``async_boundary``, ``max_workers``).
    Each call makes a new class, so per-class pools and limits never leak between tests.
    """
    body = fn or (lambda ctx: ctx.replace(trail=(*ctx.trail, name)))

    def __call__(self: Any, ctx: Any) -> Any:
        return body(ctx)

    attrs = {"requires": frozenset(requires), "provides": frozenset(provides), "__call__": __call__}
    attrs.update(class_attrs)
    return type(name, (), attrs)()
