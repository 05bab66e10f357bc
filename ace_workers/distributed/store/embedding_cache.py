"""The embedding cache of a Redis skillbook, shared by every worker and run that deduplicates it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import redis

from ...dedup.cache import EmbeddingCache
from .keys import SkillbookKeys

__all__ = ["RedisEmbeddingCache"]


class RedisEmbeddingCache:
    """An EmbeddingCache in one Redis hash per skillbook: content hash -> float32 vector bytes.

    Keyed by a hash of the model and the text, so an unchanged skill is never
    embedded twice, whichever worker or nightly run meets it first. float32
    halves the size of float64 and is what the models produce.
    """

    def __init__(self, client: redis.Redis, keys: SkillbookKeys, memo: EmbeddingCache | None = None) -> None:
        self._redis = client
        self.key = keys.embeddings
        # A content hash names one model and one text, so what this process has read
        # once stays right: the memo spares Redis the same vectors on every run.
        self.memo = memo

    def get_many(self, hashes: Sequence[str]) -> dict[str, Sequence[float]]:
        """The embeddings held for ``hashes``: the memo first, then one HMGET for the rest."""
        found = dict(self.memo.get_many(hashes)) if self.memo is not None else {}
        missing = [h for h in hashes if h not in found]
        if not missing:
            return found
        fetched = {}
        for content_hash, raw in zip(missing, self._redis.hmget(self.key, missing), strict=True):
            if isinstance(raw, bytes):
                fetched[content_hash] = np.frombuffer(raw, dtype=np.float32).tolist()
            elif raw is not None:
                raise TypeError(
                    "RedisEmbeddingCache needs a client without decode_responses (vectors are bytes)"
                )
        if self.memo is not None and fetched:
            self.memo.put_many(fetched)
        found.update(fetched)
        return found

    def put_many(self, embeddings: Mapping[str, Sequence[float]]) -> None:
        """Keep these embeddings (one HSET, and the memo)."""
        if embeddings:
            mapping = {h: np.asarray(v, dtype=np.float32).tobytes() for h, v in embeddings.items()}
            self._redis.hset(self.key, mapping=mapping)  # type: ignore[arg-type]
            if self.memo is not None:
                self.memo.put_many(embeddings)

    def __len__(self) -> int:
        return int(self._redis.hlen(self.key))
