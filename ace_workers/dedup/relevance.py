"""EmbeddingRelevance: the prompt-budget scorer that ranks skills by embedding similarity to a task."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..core.skill import Skill
from .detector import SimilarityDetector

__all__ = ["EmbeddingRelevance"]


class EmbeddingRelevance:
    """Cosine similarity between the query and each skill, with the detector's embedder and caches.

    Satisfies :class:`~ace_workers.core.prompt_budget.RelevanceScorer`. Skill
    embeddings come from the skills themselves or the detector's cache, so
    after the first prompt only the query is embedded.
    """

    def __init__(self, detector: SimilarityDetector) -> None:
        self.detector = detector

    def __call__(self, query: str, skills: Sequence[Skill]) -> list[float]:
        """One score per skill in [-1, 1]; 0.0 for a skill with no text."""
        with_text = [i for i, skill in enumerate(skills) if skill.content.strip()]
        scores = [0.0] * len(skills)
        if not with_text or not query.strip():
            return scores
        matrix, _ = self.detector.embeddings_for([skills[i] for i in with_text])
        query_vector = self.detector.embed_texts([query])[0]
        norms = np.linalg.norm(matrix, axis=1) * max(float(np.linalg.norm(query_vector)), 1e-12)
        cosines = (matrix @ query_vector) / np.maximum(norms, 1e-12)
        for index, value in zip(with_text, cosines.tolist(), strict=True):
            scores[index] = float(value)
        return scores

    def __repr__(self) -> str:
        return f"EmbeddingRelevance({self.detector!r})"
