"""Where computed embeddings are kept, keyed by a hash of the model and the skill text.

A skill carries its own embedding and the hash it was computed for; an
:class:`EmbeddingCache` is the second place to look, shared between skills
(and, for the distributed skillbook, between workers: a Redis hash fits the
interface). Either way an unchanged text is never embedded twice.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

__all__ = ["EmbeddingCache", "InMemoryEmbeddingCache", "content_hash"]


def content_hash(model: str, content: str) -> str:
    """The cache key of ``content`` embedded by ``model``: a new model or a new text is a new key."""
    return hashlib.sha256(f"{model}\n{content}".encode()).hexdigest()[:32]


@runtime_checkable
class EmbeddingCache(Protocol):
    """Embeddings by content hash; a miss is simply absent from ``get_many``'s answer."""

    def get_many(self, hashes: Sequence[str]) -> Mapping[str, Sequence[float]]:
        """The embeddings held for ``hashes`` (only those found)."""
        ...

    def put_many(self, embeddings: Mapping[str, Sequence[float]]) -> None:
        """Keep these embeddings."""
        ...


class InMemoryEmbeddingCache:
    """A process-local :class:`EmbeddingCache`, bounded: the oldest entries go first."""

    def __init__(self, max_entries: int = 100_000) -> None:
        if max_entries < 1:
            raise ValueError(f"max_entries must be >= 1, got {max_entries}")
        self.max_entries = max_entries
        self._entries: dict[str, Sequence[float]] = {}
        self._lock = threading.Lock()

    def get_many(self, hashes: Sequence[str]) -> dict[str, Sequence[float]]:
        """The embeddings held for ``hashes``."""
        with self._lock:
            return {h: self._entries[h] for h in hashes if h in self._entries}

    def put_many(self, embeddings: Mapping[str, Sequence[float]]) -> None:
        """Keep these embeddings, dropping the oldest beyond ``max_entries``."""
        with self._lock:
            self._entries.update(embeddings)
            for stale in list(self._entries)[: max(0, len(self._entries) - self.max_entries)]:
                del self._entries[stale]

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)
