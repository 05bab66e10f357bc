"""Everything ace-workers keeps in Redis: skillbooks, their change log, batch ledgers, caches.

No Celery here: the store is used and tested with a Redis client alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...lazy import lazy_exports

# Eager, unlike the rest: the function has its module's name, and importing the module (as any
# user of it does) would otherwise leave the module, not the function, as this package's attribute.
from .write_scope import write_scope

if TYPE_CHECKING:
    from .backed_skillbook import StoreBackedSkillbook
    from .batches import BatchState, BatchStatus, BatchStore
    from .changelog import ChangeKind, ChangeRecord
    from .embedding_cache import RedisEmbeddingCache
    from .errors import (
        BatchCancelledError,
        BatchInputMissingError,
        BatchNotFoundError,
        ChangelogTrimmedError,
        HeadMovedError,
        InvalidKeyPrefixError,
        InvalidLabelError,
        InvalidSkillbookNameError,
        LabelMovedError,
        ProposalConflictError,
        ProposalDecidedError,
        SkillbookExistsError,
        SkillbookFullError,
        StoreError,
        UnknownLabelError,
        UnknownProposalError,
        UnknownSkillbookError,
        VersionConflict,
        VersionRangeError,
    )
    from .keys import SkillbookKeys, dead_letters_key, registry_key, validate_skillbook_name
    from .labels import HEAD, LabelMove, SkillbookLabels, SkillbookRef, parse_skillbook_ref
    from .proposals import Proposal, ProposalKind, ProposalStatus
    from .provenance_reader import SkillHistory, skill_history
    from .review import SkillbookReview
    from .review_policy import ReviewPolicy, parse_policy
    from .skill_index import SkillIndex, SkillIndexCache, skill_index
    from .snapshots import SnapshotCache
    from .store import RedisSkillbookStore, StoreApplyResult, list_skillbooks
    from .write_scope import WriteScope, dedup_write_scope

__all__ = [
    # the skillbook store
    "RedisSkillbookStore",
    "StoreApplyResult",
    "list_skillbooks",
    "ChangeRecord",
    "ChangeKind",
    # why a skill exists (its provenance and history)
    "skill_history",
    "SkillHistory",
    # the skills of a skillbook as the console lists them (a change-log projection)
    "skill_index",
    "SkillIndex",
    "SkillIndexCache",
    # reading and writing a stored skillbook
    "SnapshotCache",
    "StoreBackedSkillbook",
    "WriteScope",
    "write_scope",
    "dedup_write_scope",
    # review before apply
    "SkillbookReview",
    "ReviewPolicy",
    "parse_policy",
    "Proposal",
    "ProposalKind",
    "ProposalStatus",
    # labelled versions
    "SkillbookLabels",
    "LabelMove",
    "SkillbookRef",
    "parse_skillbook_ref",
    "HEAD",
    # batch ledger and caches
    "BatchStore",
    "BatchStatus",
    "BatchState",
    "RedisEmbeddingCache",
    # key names
    "SkillbookKeys",
    "validate_skillbook_name",
    "registry_key",
    "dead_letters_key",
    # errors
    "StoreError",
    "VersionConflict",
    "UnknownSkillbookError",
    "SkillbookExistsError",
    "SkillbookFullError",
    "InvalidSkillbookNameError",
    "InvalidKeyPrefixError",
    "VersionRangeError",
    "ChangelogTrimmedError",
    "HeadMovedError",
    "UnknownProposalError",
    "ProposalDecidedError",
    "ProposalConflictError",
    "InvalidLabelError",
    "UnknownLabelError",
    "LabelMovedError",
    "BatchCancelledError",
    "BatchNotFoundError",
    "BatchInputMissingError",
]

# PEP 562: each name is imported from its module on first use, so importing one module of
# this package (its errors, say) does not import the others, nor Celery.
_SOURCES = (
    ".errors",
    ".backed_skillbook",
    ".batches",
    ".changelog",
    ".embedding_cache",
    ".keys",
    ".labels",
    ".proposals",
    ".provenance_reader",
    ".review",
    ".review_policy",
    ".skill_index",
    ".snapshots",
    ".store",
    ".write_scope",
)
__getattr__ = lazy_exports(__name__, __all__, _SOURCES)
