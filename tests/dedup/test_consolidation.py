"""Consolidation operations: merge arithmetic, all-or-nothing batches, JSON form, KEEP persistence."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ace_workers.core import ConsolidationBatch, DeleteOp, KeepOp, MergeOp, Skillbook, UpdateOp
from ace_workers.errors import InvalidConsolidationError, InvalidUpdateError


@pytest.fixture()
def book() -> Skillbook:
    book = Skillbook()
    for number, (helpful, harmful, neutral) in enumerate([(3, 1, 0), (2, 0, 5), (1, 4, 1), (0, 0, 0)]):
        skill = book.add_skill("math", f"Skill text number {number}.", sources=[{"sample_id": f"s{number}"}])
        for tag, count in (("helpful", helpful), ("harmful", harmful), ("neutral", neutral)):
            if count:
                book.tag_skill(skill.id, tag, count)
    return book


def _ids(book: Skillbook) -> list[str]:
    return [s.id for s in book.skills(include_invalid=True)]


def test_merge_adds_the_counters_into_the_kept_skill_and_soft_deletes_the_others(book: Skillbook) -> None:
    keep, first, second, _ = _ids(book)
    book.apply_consolidation([MergeOp(keep_id=keep, merge_ids=[first, second], merged_content="Merged.")])
    kept = book.get_skill(keep)
    assert kept is not None
    assert (kept.helpful, kept.harmful, kept.neutral) == (3 + 2 + 1, 1 + 0 + 4, 0 + 5 + 1)
    assert kept.content == "Merged."
    assert kept.is_active
    # Provenance stays bounded: the kept skill's origin, the newest, and the merge itself (by dedup).
    assert kept.occurrence_totals == {"ADD": 3, "TAG": 7, "MERGE": 1}
    assert len(kept.occurrences) == 5
    assert kept.occurrences[0]["sample_id"] == "s0"
    assert kept.occurrences[-1]["operation_type"] == "MERGE"
    assert kept.occurrences[-1]["actor"] == "dedup"
    assert kept.occurrences[-1]["merged_from"] == [first, second]
    for merged_id in (first, second):
        merged = book.get_skill(merged_id)
        assert merged is not None
        assert merged.status == "invalid"
    assert len(book) == 2
    assert book.stats()["tags"] == {"helpful": 6, "harmful": 5, "neutral": 6}


def test_a_merge_with_new_content_clears_the_kept_embedding_and_without_keeps_it(book: Skillbook) -> None:
    keep, first, second, last = _ids(book)
    book.set_embeddings({keep: ("h1", [1.0, 0.0]), second: ("h2", [0.0, 1.0])})
    book.apply_consolidation([MergeOp(keep_id=keep, merge_ids=[first])])
    kept = book.get_skill(keep)
    assert kept is not None
    assert kept.embedding == [1.0, 0.0]
    assert kept.content == "Skill text number 0."
    book.apply_consolidation([MergeOp(keep_id=second, merge_ids=[last], merged_content="New words.")])
    rewritten = book.get_skill(second)
    assert rewritten is not None
    assert rewritten.embedding is None
    assert rewritten.embedding_hash is None


def test_delete_update_and_keep(book: Skillbook) -> None:
    a, b, c, d = _ids(book)
    book.set_embeddings({b: ("h", [1.0])})
    report = book.apply_consolidation(
        ConsolidationBatch(
            operations=[
                DeleteOp(skill_id=a),
                UpdateOp(skill_id=b, new_content="  Distinct now.  "),
                KeepOp(skill_ids=[c, d], similarity=0.9, reasoning="different"),
            ]
        )
    )
    assert report.deleted == [a]
    assert report.updated == [b]
    assert report.kept == [(c, d)]
    deleted, updated = book.get_skill(a), book.get_skill(b)
    assert deleted is not None
    assert deleted.status == "invalid"
    assert updated is not None
    assert updated.content == "Distinct now."
    assert updated.embedding is None
    assert book.has_keep_decision(d, c)
    decision = book.get_similarity_decision(c, d)
    assert decision is not None
    assert decision.similarity_at_decision == 0.9


@pytest.mark.parametrize(
    ("bad_op", "bad_id"),
    [
        (DeleteOp(skill_id="math-99999"), "math-99999"),
        (MergeOp(keep_id="math-99999", merge_ids=["math-00001"]), "math-99999"),
        (KeepOp(skill_ids=["math-00001", "nope"]), "nope"),
        (UpdateOp(skill_id="math-00004", new_content="x"), "math-00004"),  # deleted earlier in the batch
    ],
)
def test_a_bad_operation_rejects_the_whole_batch(book: Skillbook, bad_op: object, bad_id: str) -> None:
    before = book.dumps()
    ops = [
        MergeOp(keep_id="math-00001", merge_ids=["math-00002"], merged_content="changed"),
        DeleteOp(skill_id="math-00004"),
        bad_op,
    ]
    with pytest.raises(InvalidConsolidationError) as caught:
        book.apply_consolidation(ops)  # type: ignore[arg-type]
    assert caught.value.index == 2
    assert caught.value.skill_id == bad_id
    assert "#2" in str(caught.value)
    assert repr(bad_id) in str(caught.value)
    assert isinstance(caught.value, InvalidUpdateError)
    assert book.dumps() == before  # nothing half-applied


def test_naming_an_already_deleted_skill_is_rejected(book: Skillbook) -> None:
    book.remove_skill("math-00003", soft=True)
    with pytest.raises(InvalidConsolidationError, match="already deleted") as caught:
        book.apply_consolidation([MergeOp(keep_id="math-00001", merge_ids=["math-00003"])])
    assert caught.value.skill_id == "math-00003"
    assert caught.value.index == 0


def test_a_merge_naming_its_kept_skill_twice_is_rejected(book: Skillbook) -> None:
    with pytest.raises(InvalidConsolidationError, match="twice"):
        book.apply_consolidation([MergeOp(keep_id="math-00001", merge_ids=["math-00001"])])


def test_only_named_skills_change(book: Skillbook) -> None:
    before = {s.id: s.to_dict() for s in book.skills()}
    book.apply_consolidation([MergeOp(keep_id="math-00001", merge_ids=["math-00002"])])
    after = {s.id: s.to_dict() for s in book.skills(include_invalid=True)}
    assert after["math-00003"] == before["math-00003"]
    assert after["math-00004"] == before["math-00004"]


def test_operations_travel_as_json_and_come_back_equal() -> None:
    batch = ConsolidationBatch(
        reasoning="why",
        operations=[
            MergeOp(keep_id="a-00001", merge_ids=["a-00002"], merged_content="m"),
            DeleteOp(skill_id="a-00003"),
            KeepOp(skill_ids=["a-00004", "a-00005"], similarity=0.91),
            UpdateOp(skill_id="a-00006", new_content="u"),
        ],
    )
    text = json.dumps(batch.to_dict())
    assert ConsolidationBatch.from_dict(json.loads(text)) == batch
    assert ConsolidationBatch.from_json(batch.to_json()) == batch
    assert [op["type"] for op in json.loads(text)["operations"]] == ["MERGE", "DELETE", "KEEP", "UPDATE"]
    assert batch.named_ids() == {f"a-0000{i}" for i in range(1, 7)}
    # Lower-case types, as LLMs write them, are accepted.
    assert ConsolidationBatch.from_dict({"operations": [{"type": "delete", "skill_id": "x"}]}).operations == [
        DeleteOp(skill_id="x")
    ]


@pytest.mark.parametrize(
    "payload",
    [
        {"operations": [{"type": "MERGE", "keep_id": "a", "merge_ids": []}]},
        {"operations": [{"type": "SPLIT", "skill_id": "a"}]},
        {"operations": [{"type": "KEEP", "skill_ids": ["a"]}]},
        "not json",
    ],
)
def test_malformed_batches_raise_invalid_update_error(payload: object) -> None:
    with pytest.raises(InvalidUpdateError):
        ConsolidationBatch.from_dict(payload)  # type: ignore[arg-type]


def test_keep_decisions_persist_across_save_and_load(book: Skillbook, tmp_path: Path) -> None:
    book.apply_consolidation([KeepOp(skill_ids=["math-00001", "math-00002"], similarity=0.88, reasoning="r")])
    path = tmp_path / "book.json"
    book.save_to_file(path)
    loaded = Skillbook.load_from_file(path)
    assert loaded.has_keep_decision("math-00002", "math-00001")
    decision = loaded.get_similarity_decision("math-00001", "math-00002")
    assert decision is not None
    assert decision.reasoning == "r"
    assert decision.similarity_at_decision == 0.88


def test_files_without_embedding_hashes_still_load() -> None:
    legacy = {
        "skills": {
            "math-00001": {"id": "math-00001", "section": "math", "content": "x", "embedding": [0.1, 0.2]}
        },
        "next_id": 1,
    }
    skill = Skillbook.from_dict(legacy).get_skill("math-00001")
    assert skill is not None
    assert skill.embedding == [0.1, 0.2]
    assert skill.embedding_hash is None
