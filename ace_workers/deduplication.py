"""The spec's ``deduplication`` path: the deduplication subsystem, which lives in :mod:`ace_workers.dedup`."""

from .dedup import (
    DeduplicationConfig,
    DeduplicationManager,
    EmbeddingCache,
    EmbeddingRelevance,
    InMemoryEmbeddingCache,
    LiteLLMEmbedder,
    PruneRule,
    SentenceTransformerEmbedder,
    SimilarityDetector,
    SimilarPair,
)

__all__ = [
    "DeduplicationManager",
    "DeduplicationConfig",
    "PruneRule",
    "SimilarityDetector",
    "SimilarPair",
    "SentenceTransformerEmbedder",
    "LiteLLMEmbedder",
    "EmbeddingCache",
    "InMemoryEmbeddingCache",
    "EmbeddingRelevance",
]
