"""Embedders for the deduplication tests: paraphrase clusters, a counting wrapper, a keyword embedder."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

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
