"""The embedding ranking over a prompt index: the same table as scanning, embedding only what changed."""

from __future__ import annotations

import random
import zlib

import numpy as np

from ace_workers.core import PromptBudget, Skillbook
from ace_workers.dedup import EmbeddingRelevance, SimilarityDetector
from tests.support.embedders import CountingEmbedder

WORDS = [f"w{index}" for index in range(40)]
BUDGET = PromptBudget(max_skills=4, max_chars=None)
DIMENSIONS = 16


def hashed_embedder(texts: list[str]) -> np.ndarray:
    """Each word a fixed pseudo-random vector (seeded by its CRC-32); a text the sum of its words'."""
    rows = []
    for text in texts:
        vector = np.zeros(DIMENSIONS)
        for word in text.lower().split():
            vector += np.random.default_rng(zlib.crc32(word.encode())).standard_normal(DIMENSIONS)
        rows.append(vector)
    return np.asarray(rows, dtype=np.float32)


def text(rng: random.Random) -> str:
    return " ".join(rng.sample(WORDS, rng.randint(2, 6)))


def image(skill_id: str, content: str, helpful: int = 0) -> dict[str, object]:
    return {"id": skill_id, "section": "s", "content": content, "helpful": helpful, "status": "active"}


def test_the_index_path_cuts_the_table_as_scanning_every_skill_does_version_after_version() -> None:
    rng = random.Random(5)
    embedder = CountingEmbedder(hashed_embedder)
    relevance = EmbeddingRelevance(SimilarityDetector(embedder))
    book = Skillbook()
    for _ in range(30):
        book.add_skill(rng.choice(["a", "b", "c"]), text(rng))
    for version in range(12):
        for query in ("", text(rng), text(rng)):
            assert book.as_prompt(BUDGET, query, relevance) == book._scanned_prompt(
                BUDGET, query, relevance
            ), (
                version,
                query,
            )
        ids = [skill.id for skill in book.skills()]
        changes: dict[str, object] = {f"new-{version}": image(f"new-{version}", text(rng))}
        changes[rng.choice(ids)] = None
        changed = rng.choice(ids)
        changes[changed] = image(changed, text(rng), helpful=rng.randint(0, 3))
        book = book.with_changes([changes], next_id=1000, order_of_new=lambda skill_id: skill_id)


def test_a_new_version_embeds_only_its_changed_skills() -> None:
    rng = random.Random(9)
    embedder = CountingEmbedder(hashed_embedder)
    relevance = EmbeddingRelevance(SimilarityDetector(embedder))
    book = Skillbook()
    for index in range(200):
        book.add_skill("s", f"rule {index} " + text(rng))
    book = book.with_changes([{}], next_id=1000, order_of_new=lambda skill_id: skill_id)  # a snapshot
    book.as_prompt(BUDGET, "w1 w2", relevance)
    embedded = sum(len(batch) for batch in embedder.batches)
    assert embedded == 200 + 1  # every skill once, and the query
    newer = book.with_changes(
        [{"new-1": image("new-1", "w3 w4 fresh")}], next_id=1000, order_of_new=lambda skill_id: skill_id
    )
    hashed: list[str] = []
    hash_of = relevance.detector.hash_of
    relevance.detector.hash_of = lambda content: hashed.append(content) or hash_of(content)  # type: ignore[method-assign]
    newer.as_prompt(BUDGET, "w1 w2", relevance)
    # The new skill's text and the query: not the 200 skills the version shares with the last,
    # whose texts are not even looked at (a scan hashes every one to find it in the cache).
    assert [len(batch) for batch in embedder.batches[-2:]] == [1, 1]
    assert sum(len(batch) for batch in embedder.batches) == embedded + 2
    assert set(hashed) == {"w3 w4 fresh"}
