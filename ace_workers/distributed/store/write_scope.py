"""Which sample and step a skillbook write belongs to, for idempotency and rebasing.

A task sets the scope around its step call; every write the step makes then
carries a key built from (batch, sample, epoch, step, n-th write in the call).
A redelivered task makes the same writes in the same order, so it produces the
same keys, and the store turns the second delivery into a no-op.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

__all__ = ["WriteScope", "current_write_scope", "dedup_write_scope", "write_scope"]


@dataclass
class WriteScope:
    """The identity of one step call that may write to a skillbook."""

    key_prefix: str
    base_version: int | None = None
    source: dict[str, Any] = field(default_factory=dict)
    writes: int = 0

    def next_key(self) -> str:
        """The idempotency key of the next write of this step call."""
        self.writes += 1
        return f"{self.key_prefix}:w{self.writes}"


_scope: ContextVar[WriteScope | None] = ContextVar("ace_write_scope", default=None)


def current_write_scope() -> WriteScope | None:
    """The scope of the step call running in this context, if any."""
    return _scope.get()


@contextmanager
def write_scope(scope: WriteScope) -> Iterator[WriteScope]:
    """Make ``scope`` current for the duration of a step call."""
    token = _scope.set(scope)
    try:
        yield scope
    finally:
        _scope.reset(token)


def dedup_write_scope(source: dict[str, Any]) -> WriteScope:
    """A scope for a deduplication run outside a step (a command, the nightly job), naming ``source``."""
    return WriteScope(key_prefix=f"dedup:{uuid.uuid4().hex}", source=source)
