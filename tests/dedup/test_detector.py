"""SimilarityDetector: real MiniLM embeddings on paraphrase clusters, the cache, the blocked search."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from ace_workers.core import SimilarityDecision, Skillbook
from ace_workers.dedup import (
    InMemoryEmbeddingCache,
    SentenceTransformerEmbedder,
    SimilarityDetector,
    find_similar_pairs,
)
from tests.support.embedders import CLUSTERS, CountingEmbedder, keyword_embedder


def _pairs(detector: SimilarityDetector, book: Skillbook, **options: object) -> set[frozenset[str]]:
    return {frozenset((p.id_a, p.id_b)) for p in detector.detect_similar_pairs(book, **options)}  # type: ignore[arg-type]


def _cluster_pairs(book: Skillbook) -> set[frozenset[str]]:
    by_section: dict[str, list[str]] = {}
    for skill in book.skills():
        by_section.setdefault(skill.section, []).append(skill.id)
    return {frozenset(pair) for ids in by_section.values() for pair in itertools.combinations(ids, 2)}


@pytest.mark.parametrize("within_section_only", [True, False])
def test_minilm_finds_every_in_cluster_pair_and_no_cross_cluster_pair(
    minilm: SentenceTransformerEmbedder, clustered_book: Skillbook, within_section_only: bool
) -> None:
    detector = SimilarityDetector(minilm)
    found = _pairs(detector, clustered_book, threshold=0.85, within_section_only=within_section_only)
    assert found == _cluster_pairs(clustered_book)
    assert len(found) == len(CLUSTERS) * 3


def test_within_section_only_compares_a_section_with_itself_only(minilm: SentenceTransformerEmbedder) -> None:
    book = Skillbook()
    first = book.add_skill("math", CLUSTERS["rounding"][0])
    second = book.add_skill("reporting", CLUSTERS["rounding"][1])
    detector = SimilarityDetector(minilm)
    assert _pairs(detector, book, within_section_only=True) == set()
    assert _pairs(detector, book, within_section_only=False) == {frozenset((first.id, second.id))}


def test_pairs_come_most_similar_first_with_real_similarities(
    minilm: SentenceTransformerEmbedder, clustered_book: Skillbook
) -> None:
    pairs = SimilarityDetector(minilm).detect_similar_pairs(clustered_book, 0.85)
    similarities = [p.similarity for p in pairs]
    assert similarities == sorted(similarities, reverse=True)
    assert all(0.85 <= s <= 1.0001 for s in similarities)


def test_a_second_run_over_an_unchanged_skillbook_computes_no_embedding(
    minilm: SentenceTransformerEmbedder, clustered_book: Skillbook
) -> None:
    counting = CountingEmbedder(minilm)
    detector = SimilarityDetector(counting, model_name="all-MiniLM-L6-v2")
    first = _pairs(detector, clustered_book)
    assert detector.embeddings_computed == 12
    second = _pairs(detector, clustered_book)
    assert detector.embeddings_computed == 12
    assert len(counting.batches) == 1
    assert first == second
    # A fresh detector (new process, empty cache) finds them stored in the skills.
    fresh = SimilarityDetector(CountingEmbedder(minilm), model_name="all-MiniLM-L6-v2")
    assert fresh.ensure_embeddings(clustered_book) == 0
    # A changed skill, and only that one, is embedded again.
    changed = clustered_book.skills()[0]
    clustered_book.update_skill(changed.id, "Always check the units of each quantity first.")
    assert fresh.ensure_embeddings(clustered_book) == 1


def test_embeddings_survive_save_and_load_with_their_hash(
    minilm: SentenceTransformerEmbedder, clustered_book: Skillbook
) -> None:
    detector = SimilarityDetector(minilm)
    detector.ensure_embeddings(clustered_book)
    loaded = Skillbook.loads(clustered_book.dumps())
    skill = loaded.skills()[0]
    assert skill.embedding_hash == detector.hash_of(skill.content)
    again = SimilarityDetector(CountingEmbedder(minilm), model_name=detector.model_name)
    assert again.ensure_embeddings(loaded) == 0


def test_another_model_name_recomputes_stored_embeddings(clustered_book: Skillbook) -> None:
    embed = keyword_embedder(["unit", "string", "cite", "round"])
    SimilarityDetector(embed, model_name="one").ensure_embeddings(clustered_book)
    assert SimilarityDetector(embed, model_name="two").ensure_embeddings(clustered_book) == 12


def test_the_cache_answers_before_the_embedder(clustered_book: Skillbook) -> None:
    cache = InMemoryEmbeddingCache()
    embed = CountingEmbedder(keyword_embedder(["unit", "string", "cite", "round"]))
    SimilarityDetector(embed, cache=cache).ensure_embeddings(clustered_book)
    other_book = Skillbook.loads(clustered_book.dumps())
    for skill in other_book.skills():  # as if the skills came without their embeddings
        other_book.set_embeddings({skill.id: ("stale", [0.0])})
    second = SimilarityDetector(embed, cache=cache)
    assert second.ensure_embeddings(other_book) == 0
    assert len(cache) == 12
    assert len(embed.batches) == 1


def test_empty_inactive_and_kept_skills_are_skipped() -> None:
    seen: list[str] = []

    def embed(texts: list[str]) -> np.ndarray:
        seen.extend(texts)
        return keyword_embedder(["alpha"])(texts)

    book = Skillbook()
    a = book.add_skill("s", "alpha one")
    b = book.add_skill("s", "alpha two")
    c = book.add_skill("s", "alpha three")
    empty = book.add_skill("s", "placeholder")
    book.update_skill(empty.id, "   ")
    gone = book.add_skill("s", "alpha four")
    book.remove_skill(gone.id, soft=True)
    book.set_similarity_decision(a.id, b.id, SimilarityDecision("KEEP"))
    detector = SimilarityDetector(embed)
    found = _pairs(detector, book, threshold=0.9)
    assert found == {frozenset((a.id, c.id)), frozenset((b.id, c.id))}
    assert sorted(seen) == ["alpha one", "alpha three", "alpha two"]


def test_max_pairs_keeps_the_most_similar(
    clustered_book: Skillbook, minilm: SentenceTransformerEmbedder
) -> None:
    detector = SimilarityDetector(minilm)
    everything = detector.detect_similar_pairs(clustered_book)
    top = detector.detect_similar_pairs(clustered_book, max_pairs=3)
    assert top == everything[:3]


@pytest.mark.parametrize("block_size", [1, 7, 64, 1024])
def test_blocked_search_equals_the_brute_force_answer(block_size: int) -> None:
    rng = np.random.default_rng(7)
    centres = rng.standard_normal((12, 32))
    vectors = np.repeat(centres, 9, axis=0) + 0.25 * rng.standard_normal((108, 32))
    groups = [str(i % 3) for i in range(len(vectors))]
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    sims = unit @ unit.T
    for labels in (None, groups):
        expected = {
            (i, j)
            for i, j in itertools.combinations(range(len(vectors)), 2)
            if sims[i, j] >= 0.8 and (labels is None or labels[i] == labels[j])
        }
        rows, cols, found_sims = find_similar_pairs(vectors, 0.8, groups=labels, block_size=block_size)
        assert set(zip(rows.tolist(), cols.tolist(), strict=True)) == expected
        assert len(rows) == len(expected)  # each pair once
        np.testing.assert_allclose(found_sims, sims[rows, cols], atol=1e-5)
        assert found_sims.dtype == np.float32


def test_fewer_than_two_rows_have_no_pairs() -> None:
    rows, cols, sims = find_similar_pairs(np.ones((1, 4), dtype=np.float32), 0.5)
    assert len(rows) == len(cols) == len(sims) == 0
