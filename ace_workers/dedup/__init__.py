"""Deduplication: find near-duplicate skills with embeddings and consolidate them.

:class:`DeduplicationManager` (configured by :class:`DeduplicationConfig`)
plans :class:`MergeOp`/:class:`DeleteOp`/:class:`KeepOp`/:class:`UpdateOp`
batches and applies them through ``Skillbook.apply_consolidation``.
:class:`SimilarityDetector` embeds only new or changed skills and finds
pairs with blocked numpy products. :class:`EmbeddingRelevance` lets the
prompt budget rank skills with the same embeddings. Importing this package
loads no model: sentence-transformers and litellm load on first use.
"""

from ..core.consolidation import (
    CONSOLIDATION_TYPES,
    ConsolidationBatch,
    ConsolidationOp,
    ConsolidationReport,
    DeleteOp,
    KeepOp,
    MergeOp,
    UpdateOp,
    apply_consolidation_operations,
    check_consolidation,
)
from ..protocols.deduplication import DeduplicationConfig
from .cache import EmbeddingCache, InMemoryEmbeddingCache, content_hash
from .detector import DEFAULT_BLOCK_SIZE, SimilarityDetector, SimilarPair, find_similar_pairs
from .embedders import (
    DEFAULT_EMBEDDING_MODEL,
    EMBEDDINGS_EXTRA,
    Embedder,
    LiteLLMEmbedder,
    SentenceTransformerEmbedder,
    make_embedder,
    packaged_model_path,
)
from .manager import DeduplicationManager, plan_auto_merges
from .prompts import CONSOLIDATION_PROMPT, ConsolidationResponse, format_similarity_report
from .pruning import PruneRule, plan_pruning
from .relevance import EmbeddingRelevance

__all__ = [
    # manager and settings
    "DeduplicationManager",
    "DeduplicationConfig",
    "PruneRule",
    # consolidation operations
    "MergeOp",
    "DeleteOp",
    "KeepOp",
    "UpdateOp",
    "ConsolidationOp",
    "ConsolidationBatch",
    "ConsolidationReport",
    "CONSOLIDATION_TYPES",
    "check_consolidation",
    "apply_consolidation_operations",
    # detection
    "SimilarityDetector",
    "SimilarPair",
    "find_similar_pairs",
    "DEFAULT_BLOCK_SIZE",
    # embeddings and their cache
    "Embedder",
    "SentenceTransformerEmbedder",
    "LiteLLMEmbedder",
    "make_embedder",
    "packaged_model_path",
    "DEFAULT_EMBEDDING_MODEL",
    "EMBEDDINGS_EXTRA",
    "EmbeddingCache",
    "InMemoryEmbeddingCache",
    "content_hash",
    # the consolidation call and planning rules
    "CONSOLIDATION_PROMPT",
    "ConsolidationResponse",
    "format_similarity_report",
    "plan_auto_merges",
    "plan_pruning",
    # prompt budget
    "EmbeddingRelevance",
]
