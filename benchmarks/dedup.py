"""Deduplication and prompt-budget figures: pair search speed and memory, embedding cache, prompt size.

1. Pair detection with precomputed, clustered, 384-dimensional float32
   embeddings (clusters of 5 near-duplicates), all sections together: time
   (best of --repeats) and peak memory (tracemalloc) for 2,000 and 10,000
   skills. Targets: 2,000 in < 0.58 s (100x the reference's 58 s), 10,000 in
   <= 3 s, peak < 1 GiB.
2. The same through SimilarityDetector on a skillbook whose skills carry
   those embeddings (copying the skills, hashing, KEEP filter, sorting: what
   a deduplication run pays), target <= 3 s for 10,000; then the embeddings
   computed by a second run (target 0).
3. Agent prompt characters (the skillbook table) for 50, 500 and 5,000
   skills with the default prompt budget: flat above the budget.

No model and no network: embeddings are generated, the embedder only counts.

    python benchmarks/dedup.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import time
import tracemalloc
from collections.abc import Callable

import numpy as np

from ace_workers.core import DEFAULT_PROMPT_BUDGET, Skillbook
from ace_workers.dedup import SimilarityDetector, find_similar_pairs
from ace_workers.roles import Agent
from ace_workers.sim import SimulatedLLM

DIM = 384
CLUSTER = 5
THRESHOLD = 0.85
REFERENCE_2000_S = 58.0
TARGET_10000_S = 3.0
TARGET_PEAK_BYTES = 1 << 30


def clustered_embeddings(count: int, seed: int = 0) -> np.ndarray:
    """``count`` unit vectors in clusters of CLUSTER: in-cluster cosine ~0.95, across ~0."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((count // CLUSTER + 1, DIM)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    noise = rng.standard_normal((count, DIM)).astype(np.float32) * np.float32(0.3 / np.sqrt(DIM))
    vectors = np.repeat(centres, CLUSTER, axis=0)[:count] + noise
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


def best_time(action: Callable[[], object], repeats: int) -> float:
    """The fastest of ``repeats`` runs, in seconds."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return min(times)


def peak_memory(action: Callable[[], object]) -> int:
    """Peak bytes allocated (numpy included) while ``action`` runs."""
    tracemalloc.start()
    try:
        action()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def book_with_embeddings(embeddings: np.ndarray, detector: SimilarityDetector) -> Skillbook:
    """A skillbook of len(embeddings) skills, each carrying its (current) embedding."""
    book = Skillbook()
    stored = {}
    for n, vector in enumerate(embeddings):
        skill = book.add_skill("general", f"Strategy {n} of cluster {n // CLUSTER}.")
        stored[skill.id] = (detector.hash_of(skill.content), vector.tolist())
    book.set_embeddings(stored)
    return book


def bench_pairs(count: int, repeats: int) -> dict[str, float]:
    """Pair-search figures for ``count`` skills."""
    embeddings = clustered_embeddings(count)
    found = len(find_similar_pairs(embeddings, THRESHOLD)[0])
    expected = (count // CLUSTER) * CLUSTER * (CLUSTER - 1) // 2
    seconds = best_time(lambda: find_similar_pairs(embeddings, THRESHOLD), repeats)
    peak = peak_memory(lambda: find_similar_pairs(embeddings, THRESHOLD))

    def refuse(texts: list[str]) -> np.ndarray:
        raise AssertionError(f"asked to embed {len(texts)} text(s): the cache should answer")

    detector = SimilarityDetector(refuse, model_name="bench")
    book = book_with_embeddings(embeddings, detector)
    detector_seconds = best_time(lambda: detector.detect_similar_pairs(book, THRESHOLD), repeats)
    return {
        "pairs": found,
        "expected": expected,
        "seconds": seconds,
        "peak": peak,
        "detector_seconds": detector_seconds,
        "second_run_embeddings": detector.embeddings_computed,
    }


def bench_cache() -> tuple[int, int]:
    """Embeddings computed by a first and a second run over an unchanged 1,000-skill skillbook."""
    vectors = clustered_embeddings(1000)
    lookup = {f"Strategy {n} of cluster {n // CLUSTER}.": vectors[n] for n in range(1000)}
    detector = SimilarityDetector(lambda texts: np.stack([lookup[t] for t in texts]), model_name="bench")
    book = Skillbook()
    for text in lookup:
        book.add_skill("general", text)
    detector.detect_similar_pairs(book, THRESHOLD)
    first = detector.embeddings_computed
    detector.detect_similar_pairs(book, THRESHOLD)
    return first, detector.embeddings_computed - first


def agent_prompt_chars(count: int) -> tuple[int, int]:
    """Characters of the skillbook table in the agent prompt: unbudgeted, and with the default budget."""
    book = Skillbook()
    for n in range(count):
        book.add_skill(
            f"topic{n % 25}",
            f"When a task of kind {n % 97} mentions item {n}, check the constraints before answering.",
        )
    agent = Agent(SimulatedLLM())
    prompt = agent.build_prompt("Which constraints apply to item 42?", "", book)
    table = prompt.split("## Skillbook\n", 1)[1].split("\n\n## Skillbook usage", 1)[0]
    return len(book.as_prompt()), len(table)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    print("Pair detection, precomputed 384-dim float32 embeddings, threshold 0.85")
    print(f"{'skills':>8} {'pairs':>7} {'search s':>9} {'speed-up':>9} {'peak MiB':>9} {'detector s':>11}")
    results = {count: bench_pairs(count, args.repeats) for count in (2_000, 10_000)}
    for count, r in results.items():
        speedup = f"{REFERENCE_2000_S / r['seconds']:>8.0f}x" if count == 2_000 else f"{'':>9}"
        print(
            f"{count:>8,} {int(r['pairs']):>7,} {r['seconds']:>9.3f} {speedup} "
            f"{r['peak'] / 2**20:>9.1f} {r['detector_seconds']:>11.3f}"
        )
        assert r["pairs"] == r["expected"], f"found {r['pairs']} pairs, expected {r['expected']}"

    first, second = bench_cache()
    print(f"\nEmbedding cache: first run computed {first}, second run computed {second} (target 0)")

    print(f"\nAgent prompt, skills table characters (default budget {DEFAULT_PROMPT_BUDGET})")
    print(f"{'skills':>8} {'whole':>10} {'budgeted':>10}")
    for count in (50, 500, 5_000):
        whole, budgeted = agent_prompt_chars(count)
        print(f"{count:>8,} {whole:>10,} {budgeted:>10,}")

    small, large = results[2_000], results[10_000]
    targets = {
        f"2,000 skills < {REFERENCE_2000_S / 100:.2f} s": small["seconds"] < REFERENCE_2000_S / 100,
        f"10,000 skills <= {TARGET_10000_S:.0f} s": large["seconds"] <= TARGET_10000_S,
        f"10,000 skills through SimilarityDetector <= {TARGET_10000_S:.0f} s": (
            large["detector_seconds"] <= TARGET_10000_S
        ),
        "10,000 skills peak < 1 GiB": large["peak"] < TARGET_PEAK_BYTES,
        "second run computes 0 embeddings": second == 0 and large["second_run_embeddings"] == 0,
    }
    print("\nTargets:")
    for name, met in targets.items():
        print(f"  {name}: {'met' if met else 'MISSED'}")


if __name__ == "__main__":
    main()
