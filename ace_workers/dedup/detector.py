"""SimilarityDetector: embeddings for the skills that need them, and similar pairs by blocked numpy.

Pairs are found with float32 matrix products over blocks of rows (never a
Python loop over pairs, never a full n x n matrix): for 10,000 skills of 384
dimensions one block of 1,024 rows costs about 40 MB.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ..core.skill import Skill
from ..core.writable import WritableSkillbook
from ..counts import counted
from .cache import EmbeddingCache, InMemoryEmbeddingCache, content_hash
from .embedders import Embedder, FloatMatrix, as_matrix, describe

__all__ = ["DEFAULT_BLOCK_SIZE", "SimilarPair", "SimilarityDetector", "find_similar_pairs"]

logger = logging.getLogger(__name__)

DEFAULT_BLOCK_SIZE = 1024
IndexArray = npt.NDArray[np.intp]


@dataclass(frozen=True)
class SimilarPair:
    """Two active skills whose embeddings' cosine similarity reached the threshold."""

    id_a: str
    id_b: str
    similarity: float


def _normalised(matrix: npt.ArrayLike) -> FloatMatrix:
    rows = np.array(matrix, dtype=np.float32)  # a copy: the caller's array stays as it was
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    rows /= np.maximum(norms, np.float32(1e-12))
    return rows


def _pairs_in_block_rows(
    matrix: FloatMatrix, threshold: float, block_size: int
) -> tuple[IndexArray, IndexArray, FloatMatrix]:
    rows_out: list[IndexArray] = []
    cols_out: list[IndexArray] = []
    sims_out: list[FloatMatrix] = []
    for start in range(0, len(matrix), block_size):
        # Rows start..stop against columns start..n: each pair once, the square part twice.
        sims = matrix[start : start + block_size] @ matrix[start:].T
        rows, cols = np.nonzero(sims >= threshold)
        upper = cols > rows
        rows, cols = rows[upper], cols[upper]
        rows_out.append(rows + start)
        cols_out.append(cols + start)
        sims_out.append(sims[rows, cols])
    return np.concatenate(rows_out), np.concatenate(cols_out), np.concatenate(sims_out)


def find_similar_pairs(
    embeddings: npt.ArrayLike,
    threshold: float,
    *,
    groups: Sequence[object] | None = None,
    block_size: int = DEFAULT_BLOCK_SIZE,
) -> tuple[IndexArray, IndexArray, FloatMatrix]:
    """Row pairs ``(i, j)``, ``i < j``, with cosine similarity >= ``threshold``, and their similarities.

    ``embeddings`` need not be normalised. With ``groups`` (one label per row)
    only rows with the same label are compared. Results come in no set order.
    """
    matrix = _normalised(embeddings)
    empty: tuple[IndexArray, IndexArray, FloatMatrix] = (
        np.empty(0, dtype=np.intp),
        np.empty(0, dtype=np.intp),
        np.empty(0, dtype=np.float32),
    )
    if len(matrix) < 2:
        return empty
    if groups is None:
        return _pairs_in_block_rows(matrix, threshold, block_size)
    labels = {label: number for number, label in enumerate(dict.fromkeys(groups))}
    codes = np.fromiter((labels[g] for g in groups), dtype=np.intp, count=len(matrix))
    order = np.argsort(codes, kind="stable")
    bounds = np.flatnonzero(np.diff(codes[order])) + 1
    parts = [empty]
    for members in np.split(order, bounds):
        if len(members) > 1:
            rows, cols, sims = _pairs_in_block_rows(matrix[members], threshold, block_size)
            parts.append((members[rows], members[cols], sims))
    return (
        np.concatenate([p[0] for p in parts]),
        np.concatenate([p[1] for p in parts]),
        np.concatenate([p[2] for p in parts]),
    )


def _kept_mask(
    rows: IndexArray, cols: IndexArray, skills: Sequence[Skill], keep_pairs: Sequence[tuple[str, str]]
) -> npt.NDArray[np.bool_]:
    """True for each found pair ``(rows[k], cols[k])`` that a KEEP decision covers (vectorised)."""
    position = {skill.id: i for i, skill in enumerate(skills)}
    known = [(position[a], position[b]) for a, b in keep_pairs if a in position and b in position]
    if not known or not len(rows):
        return np.zeros(len(rows), dtype=bool)
    n = len(skills)
    # One code per unordered pair: the smaller index times n plus the larger.
    kept_codes = np.array([min(i, j) * n + max(i, j) for i, j in known], dtype=np.int64)
    found_codes = np.minimum(rows, cols).astype(np.int64) * n + np.maximum(rows, cols)
    return np.isin(found_codes, kept_codes)


class SimilarityDetector:
    """Embeds skills (only new or changed ones) and finds similar pairs among the active ones.

    Args:
        embedder: Any callable ``list[str] -> (n, dim) array``.
        model_name: Names the embedding model in content hashes; defaults to
            the embedder's ``model`` attribute or its name. Change it and every
            stored embedding is recomputed.
        cache: Where embeddings are looked up by content hash before they are
            computed, and stored after (default: a process-local cache).
        block_size: Rows per matrix product in the pair search.

    ``embeddings_computed`` counts texts sent to the embedder since creation:
    a second run over an unchanged skillbook adds zero.
    """

    def __init__(
        self,
        embedder: Embedder,
        *,
        model_name: str | None = None,
        cache: EmbeddingCache | None = None,
        block_size: int = DEFAULT_BLOCK_SIZE,
    ) -> None:
        if block_size < 1:
            raise ValueError(f"block_size must be >= 1, got {block_size}")
        self.embedder = embedder
        self.model_name = model_name or describe(embedder)
        self.cache: EmbeddingCache = cache if cache is not None else InMemoryEmbeddingCache()
        self.block_size = block_size
        self.embeddings_computed = 0
        self._count_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"SimilarityDetector({self.model_name!r}, computed={self.embeddings_computed})"

    def hash_of(self, content: str) -> str:
        """The content hash this detector stores an embedding of ``content`` under."""
        return content_hash(self.model_name, content)

    def embed_texts(self, texts: list[str]) -> FloatMatrix:
        """Embed ``texts`` with no caching, counting them."""
        if not texts:
            return np.empty((0, 0), dtype=np.float32)
        matrix = as_matrix(self.embedder(texts), len(texts))
        with self._count_lock:
            self.embeddings_computed += len(texts)
        return matrix

    def embeddings_for(
        self, skills: Sequence[Skill]
    ) -> tuple[FloatMatrix, dict[str, tuple[str, list[float]]]]:
        """The embedding matrix of ``skills`` (one row each, in order), and the ones the skills lacked.

        A skill's own embedding is used when its ``embedding_hash`` matches its
        text; otherwise the cache, otherwise the embedder (one call for all
        misses). The second value maps skill id to ``(content_hash, vector)``
        for every skill whose embedding was not current: hand it to
        :meth:`Skillbook.set_embeddings` to keep them.
        """
        hashes = [self.hash_of(skill.content) for skill in skills]
        vectors: dict[str, Sequence[float]] = {
            h: skill.embedding
            for skill, h in zip(skills, hashes, strict=True)
            if skill.embedding is not None and skill.embedding_hash == h
        }
        missing = [h for h in dict.fromkeys(hashes) if h not in vectors]
        if missing:
            vectors.update(self.cache.get_many(missing))
            texts = {h: skill.content for skill, h in zip(skills, hashes, strict=True) if h not in vectors}
            if texts:
                computed = self.embed_texts(list(texts.values()))
                new = {h: row.tolist() for h, row in zip(texts, computed, strict=True)}
                self.cache.put_many(new)
                vectors.update(new)
                logger.debug("embedded %s with %s", counted(len(texts), "skill text"), self.model_name)
        fresh = {
            skill.id: (h, list(vectors[h]))
            for skill, h in zip(skills, hashes, strict=True)
            if skill.embedding_hash != h or skill.embedding is None
        }
        if not skills:
            return np.empty((0, 0), dtype=np.float32), fresh
        return np.asarray([vectors[h] for h in hashes], dtype=np.float32), fresh

    @staticmethod
    def candidates(skillbook: WritableSkillbook) -> list[Skill]:
        """The skills deduplication considers: active (not archived), not pinned, with non-empty content.

        A pinned skill is never paired, so it is never merged, deleted or rewritten.
        """
        return [skill for skill in skillbook.skills() if skill.content.strip() and not skill.pinned]

    def ensure_embeddings(self, skillbook: WritableSkillbook) -> int:
        """Give every candidate skill a current embedding; return how many were computed."""
        before = self.embeddings_computed
        _, fresh = self.embeddings_for(self.candidates(skillbook))
        if fresh:
            skillbook.set_embeddings(fresh)
        return self.embeddings_computed - before

    def detect_similar_pairs(
        self,
        skillbook: WritableSkillbook,
        threshold: float = 0.85,
        *,
        within_section_only: bool = True,
        max_pairs: int | None = None,
    ) -> list[SimilarPair]:
        """Similar pairs of active, non-empty skills, most similar first, skipping pairs judged KEEP."""
        skills = self.candidates(skillbook)
        matrix, fresh = self.embeddings_for(skills)
        if fresh:
            skillbook.set_embeddings(fresh)
        groups = [skill.section for skill in skills] if within_section_only else None
        rows, cols, sims = find_similar_pairs(matrix, threshold, groups=groups, block_size=self.block_size)
        kept = _kept_mask(rows, cols, skills, skillbook.keep_pairs())
        rows, cols, sims = rows[~kept], cols[~kept], sims[~kept]
        order = np.argsort(-sims, kind="stable")[:max_pairs]
        return [SimilarPair(skills[rows[k]].id, skills[cols[k]].id, float(sims[k])) for k in order]
