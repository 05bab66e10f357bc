"""The immutable context that flows from step to step."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Self

__all__ = ["StepContext"]


def _empty_metadata() -> Mapping[str, Any]:
    return MappingProxyType({})


@dataclass(frozen=True)
class StepContext:
    """Frozen per-sample state: the input sample plus read-only metadata.

    Domain code subclasses it to add its own fields; steps never mutate a
    context, they return a new one with :meth:`replace`.
    """

    sample: Any = None
    metadata: Mapping[str, Any] = field(default_factory=_empty_metadata)

    def __post_init__(self) -> None:
        metadata = self.metadata
        if not isinstance(metadata, Mapping):
            raise TypeError(
                f"{type(self).__name__}.metadata must be a mapping, got {type(metadata).__name__}"
            )
        # Always copy, even a mappingproxy: whoever holds the dict behind it could still change it.
        object.__setattr__(self, "metadata", MappingProxyType(dict(metadata)))

    def replace(self, **changes: Any) -> Self:
        """Return a copy of this context (same subclass) with ``changes`` applied."""
        try:
            return dataclasses.replace(self, **changes)
        except TypeError as exc:
            known = {f.name for f in dataclasses.fields(self)}
            unknown = sorted(set(changes) - known)
            if unknown:
                raise TypeError(
                    f"{type(self).__name__} has no field(s) {', '.join(unknown)}; "
                    f"known fields: {', '.join(sorted(known))}"
                ) from exc
            raise
