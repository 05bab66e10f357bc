"""Errors of the Redis skillbook store and of producers, under ace-workers' root AceError."""

from __future__ import annotations

from ...errors import AceError

__all__ = [
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
    """A single skill could not be added: the skillbook is at its size limit.

    Batches never raise it: their ADDs beyond the limit are left out and
    counted (``ApplyReport.full``) while the rest applies.
    """

    def __init__(self, name: str, limit: int) -> None:
        self.name = name
        self.limit = limit
        super().__init__(
            f"skillbook {name!r} is full: it holds its limit of {limit} active skills "
            "(ACE_MAX_SKILLBOOK_SKILLS), so the skill was not added; consolidate or remove skills "
            "(ace-workers skillbook dedup), or raise the limit"
        )
