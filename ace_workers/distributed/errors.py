"""Errors of the Redis skillbook store and of producers, under ace-workers' root AceError."""

from __future__ import annotations

from ..errors import AceError

__all__ = [
    "BatchSizeError",
    "SkillbookExistsError",
    "SkillbookFullError",
    "StoreError",
    "UnknownSkillbookError",
    "VersionConflict",
]


class StoreError(AceError):
    """The Redis skillbook store could not carry out an operation."""


class VersionConflict(StoreError):
    """Every compare-and-set attempt lost to another writer; nothing of this write was applied."""

    def __init__(self, name: str, attempts: int, operation: str = "write") -> None:
        self.name = name
        self.attempts = attempts
        self.operation = operation
        super().__init__(
            f"skillbook {name!r}: {operation} gave up after {attempts} attempt(s); each time another "
            "writer changed the skillbook between the read and the commit. Nothing was applied; "
            "retry later, or route writers through one queue."
        )


class UnknownSkillbookError(StoreError, LookupError):
    """No skillbook of this name exists in Redis."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f"no skillbook named {name!r} in Redis")


class SkillbookExistsError(StoreError):
    """An import would overwrite an existing skillbook and replace=True was not given."""

    def __init__(self, name: str, version: int) -> None:
        self.name = name
        self.version = version
        super().__init__(
            f"skillbook {name!r} already exists (version {version}); pass replace=True to replace it"
        )


class SkillbookFullError(StoreError):
    """An apply would take a skillbook above its most active skills; nothing of it was applied."""

    def __init__(self, name: str, limit: int, current: int, adds: int, would_hold: int) -> None:
        self.name = name
        self.limit = limit
        self.current = current
        self.adds = adds
        self.would_hold = would_hold
        super().__init__(
            f"skillbook {name!r} is full: it holds {current} active skill(s) and the batch adds {adds}, "
            f"which would make {would_hold}, above the limit of {limit} (ACE_MAX_SKILLBOOK_SKILLS). "
            "Nothing of the batch was applied; consolidate or remove skills (ace-workers skillbook "
            "dedup), or raise the limit."
        )


class BatchSizeError(AceError, ValueError):
    """An input held more items than a batch may (ACE_MAX_BATCH_SIZE), or than its declared count.

    ``sent`` items went out as batch ``batch_id`` (0 and None when refused before sending).
    """

    def __init__(self, message: str, *, limit: int, sent: int = 0, batch_id: str | None = None) -> None:
        self.limit = limit
        self.sent = sent
        self.batch_id = batch_id
        super().__init__(message)
