"""EmbeddingRelevance: the prompt-budget scorer that ranks skills by embedding similarity to a task."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Mapping, Sequence

import numpy as np

from ..core.prompt_index import PromptIndex
from ..core.skill import Skill
from .detector import SimilarityDetector

__all__ = ["EmbeddingRelevance"]

_NO_ROW = -1


class EmbeddingRelevance:
    """Cosine similarity between the query and each skill, with the detector's embedder and caches.

    Satisfies :class:`~ace_workers.core.prompt_budget.RelevanceScorer`. Skill
    embeddings come from the skills themselves or the detector's cache, so
    after the first prompt only the query is embedded.

    A skillbook's prompt index is scored without touching every skill
    (:meth:`index_scores`): each distinct skill text's unit vector is kept once,
    as a row of one matrix, and each index version knows the row of each of its
    slots, derived from the version before for the skills that changed.
    """

    def __init__(self, detector: SimilarityDetector) -> None:
        self.detector = detector
        self._lock = threading.Lock()
        self._row_of: dict[str, int] = {}  # content hash -> row of _matrix
        self._matrix = np.zeros((0, 0), dtype=np.float32)  # unit vectors; rows are only appended
        self._rows: weakref.WeakKeyDictionary[PromptIndex, np.ndarray] = weakref.WeakKeyDictionary()

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

    def index_scores(self, query: str, index: PromptIndex, skills: Mapping[str, Skill]) -> np.ndarray:
        """The cosine of every slot of ``index`` with ``query`` (0.0 for gaps and empty texts)."""
        rows = self._rows_for(index, skills)
        scores = np.zeros(len(rows))
        if not query.strip():
            return scores
        query_vector = self.detector.embed_texts([query])[0]
        unit = query_vector / max(float(np.linalg.norm(query_vector)), 1e-12)
        with self._lock:
            matrix = self._matrix  # rows are only appended: this view stays valid
        if not len(matrix):
            return scores
        cosines = matrix @ unit
        present = rows != _NO_ROW
        scores[present] = cosines[rows[present]]
        return scores

    def _rows_for(self, index: PromptIndex, skills: Mapping[str, Skill]) -> np.ndarray:
        """Each slot's row in the matrix, from the parent index's for the slots that changed."""
        with self._lock:
            known = self._rows.get(index)
            parent = index.parent() if index.parent is not None else None
            base = self._rows.get(parent) if parent is not None else None
        if known is not None:
            return known
        rows = np.full(len(index.ids), _NO_ROW, dtype=np.int64)
        if base is not None:  # the parent's rows, with its changed slots looked up again
            rows[: len(base)] = base
            slots = index.touched.tolist()
            rows[index.touched] = _NO_ROW
        else:
            slots = np.flatnonzero(index.active).tolist()
        wanted = [(slot, skills[skill_id]) for slot in slots if (skill_id := index.ids[slot]) is not None]
        wanted = [(slot, skill) for slot, skill in wanted if index.active[slot] and skill.content.strip()]
        if wanted:
            for slot, row in zip(
                (slot for slot, _ in wanted), self._store([s for _, s in wanted]), strict=True
            ):
                rows[slot] = row
        with self._lock:
            self._rows[index] = rows
        return rows

    def _store(self, skills: list[Skill]) -> list[int]:
        """The matrix row of each skill's text, embedding (through the detector's caches) the new ones."""
        hashes = [self.detector.hash_of(skill.content) for skill in skills]
        with self._lock:
            missing = [i for i, h in enumerate(hashes) if h not in self._row_of]
        if missing:
            vectors, _ = self.detector.embeddings_for([skills[i] for i in missing])
            norms = np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
            units = (vectors / norms).astype(np.float32)
            with self._lock:
                fresh = [
                    (hashes[i], units[n]) for n, i in enumerate(missing) if hashes[i] not in self._row_of
                ]
                if fresh:
                    start = len(self._matrix)
                    added = np.stack([vector for _, vector in fresh])
                    self._matrix = added if not start else np.concatenate([self._matrix, added])
                    for offset, (content, _) in enumerate(fresh):
                        self._row_of.setdefault(content, start + offset)
        with self._lock:
            return [self._row_of[h] for h in hashes]

    def __repr__(self) -> str:
        return f"EmbeddingRelevance({self.detector!r})"
