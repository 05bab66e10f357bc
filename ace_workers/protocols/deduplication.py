"""The spec's ``protocols.deduplication`` path: the deduplication interface and its configuration."""

from ..dedup.config import DeduplicationConfig
from . import DeduplicationManagerLike

__all__ = ["DeduplicationConfig", "DeduplicationManagerLike"]
