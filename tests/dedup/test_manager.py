"""DeduplicationManager: the LLM decides pairs, the fallback rule, pruning, and building errors."""

from __future__ import annotations

import importlib.util
from types import SimpleNamespace
from typing import Any, TypeVar

import numpy as np
import pytest
from pydantic import BaseModel

from ace_workers.core import DeleteOp, KeepOp, MergeOp, Skillbook
from ace_workers.dedup import (
    ConsolidationResponse,
    DeduplicationConfig,
    DeduplicationManager,
    LiteLLMEmbedder,
    PruneRule,
    SimilarityDetector,
    embedders,
)
from ace_workers.errors import EmbeddingUnavailableError, InvalidUpdateError, LLMError
from ace_workers.sim import SimulatedLLM
from tests.support.embedders import keyword_embedder
from tests.support.llms import ScriptedStructuredLLM

ModelT = TypeVar("ModelT", bound=BaseModel)


def _vector_embedder(vectors: dict[str, list[float]]) -> Any:
    """Each text's embedding is looked up by its first word: similarities are set by the test."""

    def embed(texts: list[str]) -> np.ndarray:
        return np.asarray([vectors[text.split()[0]] for text in texts], dtype=np.float32)

    return embed


def _angle(cosine: float) -> list[float]:
    return [cosine, float(np.sqrt(1 - cosine**2)), 0.0]


# Against "base": dup 0.99 (auto-merge), near 0.9 (for the LLM), far 0.5 (not similar).
VECTORS = {"base": [1.0, 0.0, 0.0], "dup": _angle(0.99), "near": _angle(0.9), "far": _angle(0.5)}


def _manager(llm: Any = None, **options: Any) -> DeduplicationManager:
    detector = SimilarityDetector(_vector_embedder(VECTORS), model_name="test")
    return DeduplicationManager(DeduplicationConfig(**options), llm=llm, detector=detector)


def _book(*words: str) -> tuple[Skillbook, list[str]]:
    book = Skillbook()
    ids = [book.add_skill("s", f"{word} skill {n}").id for n, word in enumerate(words)]
    return book, ids


def test_without_an_llm_only_pairs_above_the_auto_merge_threshold_merge_keeping_the_older() -> None:
    book, (base, dup, near) = _book("base", "dup", "near")
    book.tag_skill(dup, "helpful", 2)
    report = _manager().deduplicate(book)
    assert report.merged == {base: [dup]}
    kept = book.get_skill(base)
    assert kept is not None
    assert kept.helpful == 2
    assert kept.content == "base skill 0"
    assert book.get_skill(near) is not None  # type: ignore[union-attr]
    assert book.get_skill(near).is_active  # type: ignore[union-attr]
    assert [s.id for s in book.skills()] == [base, near]


def test_auto_merge_keeps_the_older_skill_even_when_it_was_added_second() -> None:
    book = Skillbook()
    newer = book.add_skill("s", "dup newer")
    older = book.add_skill("s", "base older")
    data = book.to_dict()
    data["skills"][older.id]["created_at"] = "2000-01-01T00:00:00+00:00"
    book = Skillbook.from_dict(data)
    assert _manager().deduplicate(book).merged == {older.id: [newer.id]}


def test_auto_merge_never_chains_a_merged_skill_into_another() -> None:
    book, (first, second, third) = _book("base", "base", "base")
    assert _manager().deduplicate(book).merged == {first: [second, third]}
    assert len(book) == 1


def test_the_llm_decides_the_reported_pairs_and_keep_decisions_stop_them_being_reported() -> None:
    book, (base, near, far) = _book("base", "near", "far")
    llm = ScriptedStructuredLLM(
        ConsolidationResponse,
        ConsolidationResponse(consolidation_operations=[KeepOp(skill_ids=[base, near], similarity=0.9)]),
    )
    manager = _manager(llm)
    report = manager.deduplicate(book)
    assert report.kept == [(base, near)]
    assert f"[{base}]" in llm.prompts[0]
    assert f"[{near}]" in llm.prompts[0]
    assert f"[{far}]" not in llm.prompts[0]
    assert "similarity 0.900" in llm.prompts[0]
    assert manager.get_similarity_report(book) is None
    assert manager.plan(book).operations == []
    assert len(llm.prompts) == 1  # nothing left to ask about


def test_an_answer_naming_unknown_ids_is_fed_back_and_retried() -> None:
    book, (base, near) = _book("base", "near")
    llm = ScriptedStructuredLLM(
        ConsolidationResponse,
        ConsolidationResponse(consolidation_operations=[DeleteOp(skill_id="s-99999")]),
        ConsolidationResponse(
            consolidation_operations=[MergeOp(keep_id=base, merge_ids=[near], merged_content="Both.")]
        ),
    )
    report = _manager(llm).deduplicate(book)
    assert report.merged == {base: [near]}
    assert "Previous answer rejected" not in llm.prompts[0]
    assert "Previous answer rejected" in llm.prompts[1]
    assert "'s-99999'" in llm.prompts[1]
    merged = book.get_skill(base)
    assert merged is not None
    assert merged.content == "Both."


@pytest.mark.parametrize(
    "answers",
    [
        [LLMError("provider down")],
        [ConsolidationResponse(consolidation_operations=[DeleteOp(skill_id="nope")])] * 2,
    ],
    ids=["llm-error", "always-invalid"],
)
def test_when_the_llm_fails_the_auto_merge_rule_still_applies(answers: list[Any]) -> None:
    book, (base, dup, near) = _book("base", "dup", "near")
    report = _manager(ScriptedStructuredLLM(ConsolidationResponse, *answers)).deduplicate(book)
    assert report.merged == {base: [dup]}
    assert not report.kept
    assert not report.deleted
    assert book.get_skill(near) is not None


def test_pairs_the_llm_left_open_above_the_auto_threshold_are_merged() -> None:
    book = Skillbook()
    base = book.add_skill("a", "base a").id
    dup = book.add_skill("a", "dup a").id
    other = book.add_skill("b", "base b").id
    near = book.add_skill("b", "near b").id
    llm = ScriptedStructuredLLM(
        ConsolidationResponse,
        ConsolidationResponse(consolidation_operations=[KeepOp(skill_ids=[other, near])]),
    )
    report = _manager(llm).deduplicate(book)
    assert report.merged == {base: [dup]}
    assert report.kept == [(other, near)]


def test_the_simulated_llm_merges_restatements_of_one_rule_and_keeps_the_rest() -> None:
    book = Skillbook()
    rule = book.add_skill("zorb", "For zorb questions, reverse the digits of the input.").id
    again = book.add_skill("zorb", "In zorb puzzles, reverse the digits of the input.").id
    other = book.add_skill("zorb", "For zorb questions, add one to the input.").id
    detector = SimilarityDetector(keyword_embedder(["zorb", "questions", "input"]))
    manager = DeduplicationManager(
        DeduplicationConfig(similarity_threshold=0.5, auto_merge_threshold=None),
        llm=SimulatedLLM(),
        detector=detector,
    )
    batch = manager.plan(book)
    assert (
        MergeOp(
            keep_id=rule,
            merge_ids=[again],
            merged_content=book.get_skill(rule).content,  # type: ignore[union-attr]
            reasoning="Both state the same rule.",
        )
        in batch.operations
    )
    assert any(isinstance(op, KeepOp) and set(op.skill_ids) == {rule, other} for op in batch.operations)
    report = manager.apply_operations(batch, book)
    assert report.merged == {rule: [again]}
    assert manager.plan(book).operations == []  # same answers the second time: nothing left


def test_pruning_deletes_skills_that_proved_harmful_through_the_same_path() -> None:
    book, (harmful, young, balanced) = _book("base", "near", "far")
    book.tag_skill(harmful, "harmful", 5)
    book.tag_skill(harmful, "helpful", 1)
    book.tag_skill(young, "harmful", 2)  # too few votes yet
    book.tag_skill(balanced, "harmful", 4)
    book.tag_skill(balanced, "helpful", 3)
    manager = _manager(
        similarity_threshold=0.99, auto_merge_threshold=None, prune=PruneRule(min_tags=3, harmful_margin=3)
    )
    report = manager.deduplicate(book)
    assert report.deleted == [harmful]
    assert [s.id for s in book.skills()] == [young, balanced]


def test_a_disabled_manager_reports_and_plans_nothing() -> None:
    book, _ = _book("base", "dup")
    manager = _manager(enabled=False)
    assert manager.get_similarity_report(book) is None
    assert manager.plan(book).operations == []
    assert len(book) == 2


def test_parse_consolidation_operations_reads_a_response_object() -> None:
    ops = DeduplicationManager.parse_consolidation_operations(
        '{"consolidation_operations": [{"type": "merge", "keep_id": "a", "merge_ids": ["b"]},'
        ' {"type": "KEEP", "skill_ids": ["c", "d"], "similarity": 0.9}]}'
    )
    assert ops == [MergeOp(keep_id="a", merge_ids=["b"]), KeepOp(skill_ids=["c", "d"], similarity=0.9)]
    with pytest.raises(InvalidUpdateError, match="#0"):
        DeduplicationManager.parse_consolidation_operations({"consolidation_operations": [{"type": "MERGE"}]})


def test_missing_sentence_transformers_fails_when_the_manager_is_built(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real_find_spec = importlib.util.find_spec

    def find_spec(name: str, *args: Any) -> Any:
        return None if name == "sentence_transformers" else real_find_spec(name, *args)

    monkeypatch.setattr(embedders.importlib.util, "find_spec", find_spec)
    with pytest.raises(EmbeddingUnavailableError, match=r"ace-workers\[embeddings\]") as caught:
        DeduplicationManager(DeduplicationConfig())
    assert caught.value.extra == "embeddings"


def test_a_missing_model_folder_fails_when_the_manager_is_built(tmp_path: Any) -> None:
    with pytest.raises(EmbeddingUnavailableError, match="no model folder"):
        DeduplicationManager(DeduplicationConfig(embedding_model=str(tmp_path / "absent")))


@pytest.mark.parametrize("model", ["no-such-model-xyz", "folder-without-a-model"])
def test_a_model_that_cannot_be_loaded_fails_when_the_manager_is_built(model: str, tmp_path: Any) -> None:
    # An unknown name (the hub is offline in tests) and a folder holding no model both
    # fail here, naming the model and the extra, not at the first skill embedded.
    name = str(tmp_path) if model == "folder-without-a-model" else model
    with pytest.raises(EmbeddingUnavailableError, match=r"ace-workers\[embeddings\]") as caught:
        DeduplicationManager(DeduplicationConfig(embedding_model=name))
    assert name in str(caught.value)
    assert "cannot load model" in caught.value.reason


def test_the_default_manager_uses_the_packaged_minilm_offline() -> None:
    manager = DeduplicationManager()
    embedder = manager.detector.embedder
    assert isinstance(embedder, embedders.SentenceTransformerEmbedder)
    assert embedder.offline
    assert embedder.location == embedders.packaged_model_path()
    assert manager.detector.model_name == "all-MiniLM-L6-v2"


def test_litellm_embeddings_come_back_in_input_order(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[dict[str, Any]] = []

    def embedding(**kwargs: Any) -> Any:
        calls.append(kwargs)
        data = [{"index": i, "embedding": [float(i), 1.0]} for i in range(len(kwargs["input"]))]
        return SimpleNamespace(data=list(reversed(data)))

    monkeypatch.setattr(embedders, "import_litellm", lambda: SimpleNamespace(embedding=embedding))
    manager = DeduplicationManager(
        DeduplicationConfig(embedding_provider="litellm", embedding_model="text-embedding-3-small")
    )
    assert isinstance(manager.detector.embedder, LiteLLMEmbedder)
    matrix = manager.detector.embed_texts(["a", "b", "c"])
    assert matrix.tolist() == [[0.0, 1.0], [1.0, 1.0], [2.0, 1.0]]
    assert calls == [{"model": "text-embedding-3-small", "input": ["a", "b", "c"]}]


@pytest.mark.parametrize(
    "options",
    [
        {"similarity_threshold": 0.0},
        {"similarity_threshold": 0.9, "auto_merge_threshold": 0.8},
        {"max_pairs_per_run": 0},
        {"embedding_provider": 3},
    ],
)
def test_bad_settings_fail_when_declared(options: dict[str, Any]) -> None:
    with pytest.raises((ValueError, TypeError)):
        DeduplicationConfig(**options)


def test_an_unknown_provider_name_fails_when_the_manager_is_built() -> None:
    with pytest.raises(ValueError, match="unknown embedding provider"):
        DeduplicationManager(DeduplicationConfig(embedding_provider="word2vec"))


class RewrittenMidway(Skillbook):
    """A skillbook another writer changes once, between the first plan and its apply."""

    def __init__(self) -> None:
        super().__init__()
        self.applies = 0

    def apply_consolidation(self, operations: Any) -> Any:
        self.applies += 1
        if self.applies == 1:
            kept = operations.operations[0].keep_id
            self.update_skill(kept, "base skill, rewritten by a worker meanwhile")
        return super().apply_consolidation(operations)


def test_a_plan_made_stale_by_a_rewrite_is_refused_whole_and_planned_again() -> None:
    book = RewrittenMidway()
    base = book.add_skill("s", "base skill 0").id
    dup = book.add_skill("s", "dup skill 1").id
    book.tag_skill(dup, "helpful", 2)
    report = _manager().deduplicate(book)
    # The first plan judged the old text and was refused; the second saw the rewrite.
    assert book.applies == 2
    assert report.merged == {base: [dup]}
    kept = book.get_skill(base)
    assert kept is not None
    assert kept.content == "base skill, rewritten by a worker meanwhile"
    assert kept.helpful == 2


def test_a_batch_naming_a_rewritten_skill_changes_nothing() -> None:
    book, (base, dup, _) = _book("base", "dup", "far")
    plan = _manager().plan(book)
    assert plan.planned_contents == {base: "base skill 0", dup: "dup skill 1"}
    book.update_skill(dup, "dup skill, said anew")
    with pytest.raises(InvalidUpdateError, match="rewritten after the plan"):
        book.apply_consolidation(plan)
    assert len(book.skills()) == 3  # type: ignore[union-attr]
    assert book.get_skill(dup).is_active  # type: ignore[union-attr]
