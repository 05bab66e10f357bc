"""Distributed learning on Redis: the versioned skillbook store every worker writes through."""

from .changelog import ChangeKind, ChangeRecord
from .errors import (
    BatchSizeError,
    SkillbookExistsError,
    SkillbookFullError,
    StoreError,
    UnknownSkillbookError,
    VersionConflict,
)
from .keys import SkillbookKeys, registry_key, validate_skillbook_name
from .snapshots import ReadOnlySkillbook, SnapshotCache
from .store import RedisSkillbookStore, StoreApplyResult, list_skillbooks

__all__ = [
    # store
    "RedisSkillbookStore",
    "StoreApplyResult",
    "ChangeRecord",
    "ChangeKind",
    "SnapshotCache",
    "ReadOnlySkillbook",
    "SkillbookKeys",
    "validate_skillbook_name",
    "registry_key",
    "list_skillbooks",
    "StoreError",
    "VersionConflict",
    "UnknownSkillbookError",
    "SkillbookExistsError",
    "SkillbookFullError",
    "BatchSizeError",
]
