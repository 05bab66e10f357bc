"""The embedding cache of a Redis skillbook, shared by every worker and run that deduplicates it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import redis

from .keys import SkillbookKeys

__all__ = ["RedisEmbeddingCache"]


class RedisEmbeddingCache:
    """An EmbeddingCache in one Redis hash per skillbook: content hash -> float32 vector bytes.

    Keyed by a hash of the model and the text, so an unchanged skill is never
    embedded twice, whichever worker or nightly run meets it first. float32
    halves the size of float64 and is what the models produce.
    """

    def __init__(self, client: redis.Redis, keys: SkillbookKeys) -> None:
        self._redis = client
        self.key = keys.embeddings

    def get_many(self, hashes: Sequence[str]) -> dict[str, Sequence[float]]:
        """The embeddings held for ``hashes`` (one HMGET)."""
        if not hashes:
            return {}
        found = {}
        for content_hash, raw in zip(hashes, self._redis.hmget(self.key, list(hashes)), strict=True):
            if isinstance(raw, bytes):
                found[content_hash] = np.frombuffer(raw, dtype=np.float32).tolist()
            elif raw is not None:
                raise TypeError(
                    "RedisEmbeddingCache needs a client without decode_responses (vectors are bytes)"
                )
        return found

    def put_many(self, embeddings: Mapping[str, Sequence[float]]) -> None:
        """Keep these embeddings (one HSET)."""
        if embeddings:
            mapping = {h: np.asarray(v, dtype=np.float32).tobytes() for h, v in embeddings.items()}
            self._redis.hset(self.key, mapping=mapping)  # type: ignore[arg-type]

    def __len__(self) -> int:
        return int(self._redis.hlen(self.key))
