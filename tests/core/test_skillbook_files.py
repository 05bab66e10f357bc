"""Skillbook files: the reference framework's shapes load and round-trip; bad files fail clearly."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from ace_workers.core import Skillbook, UpdateBatch, UpdateOperation, extract_cited_skill_ids
from ace_workers.errors import SkillbookFormatError

# The reference ACE framework's classic file: every skill carries its three counters.
CLASSIC_REFERENCE_FILE = """
{
  "skills": {
    "general-00001": {
      "id": "general-00001",
      "section": "general",
      "content": "Check units before answering.",
      "helpful": 3,
      "harmful": 1,
      "neutral": 2,
      "created_at": "2025-01-01T10:00:00+00:00",
      "updated_at": "2025-01-02T10:00:00+00:00"
    },
    "general-00002": {
      "id": "general-00002",
      "section": "general",
      "content": "Re-check units at the very end.",
      "helpful": 0,
      "harmful": 0,
      "neutral": 5,
      "created_at": "2025-01-01T11:00:00+00:00",
      "updated_at": "2025-01-01T11:00:00+00:00"
    },
    "math-00003": {
      "id": "math-00003",
      "section": "math",
      "content": "Estimate the order of magnitude first.",
      "helpful": 7,
      "harmful": 0,
      "neutral": 0,
      "created_at": "2025-01-03T09:30:00+00:00",
      "updated_at": "2025-01-04T09:30:00+00:00"
    }
  },
  "sections": {"general": ["general-00001", "general-00002"], "math": ["math-00003"]},
  "next_id": 9,
  "similarity_decisions": {
    "general-00001,general-00002": {
      "decision": "KEEP",
      "reasoning": "One is about the start, the other about the end.",
      "decided_at": "2025-01-05T00:00:00+00:00",
      "similarity_at_decision": 0.91
    }
  }
}
"""

# A newer reference file: no counters on skills, unknown keys on skills and at the top level.
NEWER_REFERENCE_FILE = """
{
  "version": 2,
  "metadata": {"framework": "ace", "framework_version": "0.9.0"},
  "skills": {
    "strategy-00004": {
      "id": "strategy-00004",
      "section": "strategy",
      "content": "Decompose the task before acting.",
      "justification": null,
      "evidence": null,
      "tags": ["planning"],
      "metadata": {"origin": "reflection"},
      "version": 3,
      "created_at": "2025-06-01T00:00:00+00:00",
      "updated_at": "2025-06-02T00:00:00+00:00",
      "embedding": null,
      "status": "active",
      "sources": [{"epoch": 1, "sample_question": "What is 2+2?"}]
    },
    "strategy-00005": {
      "id": "strategy-00005",
      "section": "strategy",
      "content": "Plan the steps before acting.",
      "tags": [],
      "metadata": {},
      "version": 1,
      "created_at": "2025-06-03T00:00:00+00:00",
      "updated_at": "2025-06-03T00:00:00+00:00"
    }
  },
  "sections": {"strategy": ["strategy-00004", "strategy-00005"]},
  "next_id": 6,
  "similarity_decisions": {
    "strategy-00004,strategy-00005": {
      "decision": "KEEP",
      "reasoning": "Decomposing is not the same as ordering.",
      "decided_at": "2025-06-04T00:00:00+00:00",
      "similarity_at_decision": 0.88,
      "reviewer": "skill-manager"
    }
  },
  "settings": {"dedup_threshold": 0.85}
}
"""

REFERENCE_FILES = {"classic": CLASSIC_REFERENCE_FILE, "newer": NEWER_REFERENCE_FILE}


def _essentials_from_text(text: str) -> dict[str, Any]:
    """What must survive loading and saving, read straight from the file text."""
    data = json.loads(text)
    return {
        "skills": {
            key: (
                raw["section"],
                raw["content"],
                raw.get("helpful", 0),
                raw.get("harmful", 0),
                raw.get("neutral", 0),
            )
            for key, raw in data["skills"].items()
        },
        "next_id": data["next_id"],
    }


def _essentials(book: Skillbook) -> dict[str, Any]:
    return {
        "skills": {s.id: (s.section, s.content, s.helpful, s.harmful, s.neutral) for s in book.skills()},
        "next_id": book.to_dict()["next_id"],
    }


def _keep_pair(text: str) -> tuple[str, str]:
    first, second = next(iter(json.loads(text)["similarity_decisions"])).split(",")
    return first, second


def _write(tmp_path: Path, text: str | bytes, name: str = "skillbook.json") -> Path:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def test_classic_reference_file_loads_with_its_counters(tmp_path: Path) -> None:
    book = Skillbook.load_from_file(_write(tmp_path, CLASSIC_REFERENCE_FILE))
    assert _essentials(book) == _essentials_from_text(CLASSIC_REFERENCE_FILE)
    assert book.get_skill("math-00003").created_at == "2025-01-03T09:30:00+00:00"


def test_newer_reference_file_loads_ignoring_unknown_keys_with_counters_at_zero(tmp_path: Path) -> None:
    book = Skillbook.load_from_file(_write(tmp_path, NEWER_REFERENCE_FILE))
    assert _essentials(book) == {
        "skills": {
            "strategy-00004": ("strategy", "Decompose the task before acting.", 0, 0, 0),
            "strategy-00005": ("strategy", "Plan the steps before acting.", 0, 0, 0),
        },
        "next_id": 6,
    }
    # Its provenance, called "sources" by older versions, loads as the occurrences.
    assert book.get_skill("strategy-00004").occurrences == [{"epoch": 1, "sample_question": "What is 2+2?"}]


@pytest.mark.parametrize("shape", REFERENCE_FILES)
def test_reference_files_round_trip_through_save_and_load(tmp_path: Path, shape: str) -> None:
    text = REFERENCE_FILES[shape]
    saved = tmp_path / "saved.json"
    Skillbook.load_from_file(_write(tmp_path, text)).save_to_file(saved)
    reloaded = Skillbook.load_from_file(saved)
    assert _essentials(reloaded) == _essentials_from_text(text)
    id_a, id_b = _keep_pair(text)
    assert reloaded.has_keep_decision(id_a, id_b)
    assert reloaded.has_keep_decision(id_b, id_a)


@pytest.mark.parametrize("shape", REFERENCE_FILES)
def test_reference_files_round_trip_through_dumps_and_loads(shape: str) -> None:
    text = REFERENCE_FILES[shape]
    reloaded = Skillbook.loads(Skillbook.loads(text).dumps())
    assert _essentials(reloaded) == _essentials_from_text(text)
    id_a, id_b = _keep_pair(text)
    assert reloaded.has_keep_decision(id_a, id_b)
    assert reloaded.has_keep_decision(id_b, id_a)


@pytest.mark.parametrize("shape", REFERENCE_FILES)
def test_similarity_decision_keeps_its_score_under_the_reference_key(shape: str) -> None:
    # The reference builds SimilarityDecision(**saved_dict): it needs similarity_at_decision.
    text = REFERENCE_FILES[shape]
    [(pair, original)] = json.loads(text)["similarity_decisions"].items()
    [(saved_pair, saved)] = json.loads(Skillbook.loads(text).dumps())["similarity_decisions"].items()
    assert saved_pair == pair
    assert saved["similarity_at_decision"] == original["similarity_at_decision"]


def test_loading_never_reissues_an_id_when_next_id_is_stale() -> None:
    data = json.loads(CLASSIC_REFERENCE_FILE)
    data["next_id"] = 1
    book = Skillbook.loads(json.dumps(data))
    added = book.add_skill("math", "New strategy")
    assert len(book) == 4
    assert book.get_skill("math-00003").content == "Estimate the order of magnitude first."
    assert added.id not in {"general-00001", "general-00002", "math-00003"}


def test_file_that_is_not_json_names_path_line_and_column(tmp_path: Path) -> None:
    path = _write(tmp_path, '{\n  "skills": {,\n}')
    with pytest.raises(SkillbookFormatError) as info:
        Skillbook.load_from_file(path)
    assert str(path) in str(info.value)
    assert "line 2, column 14" in str(info.value)


def test_file_holding_a_json_array_is_rejected(tmp_path: Path) -> None:
    path = _write(tmp_path, "[]")
    with pytest.raises(SkillbookFormatError, match="expected a JSON object, got list") as info:
        Skillbook.load_from_file(path)
    assert info.value.source == str(path)


def test_skill_without_content_is_named_in_the_error(tmp_path: Path) -> None:
    data = json.loads(CLASSIC_REFERENCE_FILE)
    del data["skills"]["general-00002"]["content"]
    with pytest.raises(SkillbookFormatError, match=r"'general-00002'.*'content'"):
        Skillbook.load_from_file(_write(tmp_path, json.dumps(data)))


def test_missing_file_is_a_format_error_naming_the_path(tmp_path: Path) -> None:
    path = tmp_path / "nowhere" / "skillbook.json"
    with pytest.raises(SkillbookFormatError) as info:
        Skillbook.load_from_file(path)
    assert str(path) in str(info.value)


def test_file_that_is_not_utf8_is_a_format_error_naming_the_path(tmp_path: Path) -> None:
    path = _write(tmp_path, '{"skills": {}, "note": "caf\xe9"}'.encode("latin-1"))
    with pytest.raises(SkillbookFormatError) as info:
        Skillbook.load_from_file(path)
    assert str(path) in str(info.value)


def _fail(*args: object, **kwargs: object) -> Any:
    raise RuntimeError("simulated crash")


@pytest.mark.parametrize(
    "target",
    [(Skillbook, "dumps"), (os, "fsync"), (os, "replace")],
    ids=["serialising", "writing", "renaming"],
)
def test_failed_save_keeps_the_previous_file_and_leaves_no_temp_file(
    book: Skillbook, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: tuple[object, str]
) -> None:
    path = tmp_path / "skillbook.json"
    book.save_to_file(path)
    previous = path.read_text(encoding="utf-8")
    book.add_skill("general", "A change that must not half-land")
    monkeypatch.setattr(*target, _fail)
    with pytest.raises(RuntimeError, match="simulated crash"):
        book.save_to_file(path)
    monkeypatch.undo()
    assert path.read_text(encoding="utf-8") == previous
    assert sorted(p.name for p in tmp_path.iterdir()) == ["skillbook.json"]


def test_a_reference_files_last_issued_number_is_not_issued_again() -> None:
    # The reference stores the last number it issued; its skill #5 was hard-deleted.
    text = json.dumps(
        {
            "skills": {"general-00004": {"id": "general-00004", "section": "general", "content": "Kept"}},
            "sections": {"general": ["general-00004"]},
            "next_id": 5,
        }
    )
    book = Skillbook.loads(text)
    assert book.add_skill("general", "New").id == "general-00006"


def test_an_llm_chosen_id_outside_the_scheme_is_replaced_by_a_citable_one() -> None:
    book = Skillbook()
    report = book.apply_update(
        UpdateBatch(
            operations=[UpdateOperation(type="ADD", section="math", content="c", skill_id="My Skill")]
        )
    )
    [skill_id] = report.added
    assert skill_id == "math-00001"
    assert extract_cited_skill_ids(f"see [{skill_id}]") == [skill_id]
