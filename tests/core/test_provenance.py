"""Provenance in the core: every write records a bounded occurrence; other files' provenance loads."""

from __future__ import annotations

import json

import pytest

from ace_workers.core import Skillbook, UpdateBatch, UpdateOperation
from ace_workers.core.consolidation import DEDUP_ACTOR
from ace_workers.core.skill_provenance import INSIGHT_CHARS, PROVENANCE_FIELDS
from ace_workers.distributed.store import actors
from ace_workers.errors import SkillbookFormatError
from ace_workers.steps import provenance_source as steps_provenance

# The reference framework's 0.13 file (schema 2): issue and insight, *_count counters, active,
# and provenance as "occurrences" of trace identities.
REFERENCE_013_FILE = {
    "schema_version": "2",
    "skills": {
        "context-00001": {
            "id": "context-00001",
            "section": "context",
            "keywords": ["units"],
            "issue": "Answers mix units",
            "insight": "Convert every quantity to SI first",
            "occurrences": [
                {
                    "trace_uid": "kayba-hosted:conv-123",
                    "source_system": "kayba-hosted",
                    "trace_id": "conv-123",
                    "display_name": "units.md",
                    "epoch": 1,
                    "operation_type": "ADD",
                },
                {
                    "trace_uid": "local:conv-9",
                    "source_system": "local",
                    "trace_id": "conv-9",
                    "operation_type": "TAG",
                },
            ],
            "active": True,
            "used_count": 4,
            "helpful_count": 3,
            "harmful_count": 1,
            "neutral_count": 0,
            "created_at": "2026-03-18T14:46:01+00:00",
            "updated_at": "2026-03-18T14:59:01+00:00",
        },
        "harness-00002": {
            "id": "harness-00002",
            "section": "harness",
            "keywords": ["retries"],
            "issue": "Retry a flaky tool once",
            "insight": None,
            "occurrences": [],
            "active": False,
            "used_count": 0,
            "helpful_count": 0,
            "harmful_count": 2,
            "neutral_count": 0,
        },
    },
    "sections": {"context": ["context-00001"], "harness": ["harness-00002"]},
    "next_id": 2,
    "similarity_decisions": {},
}

# Our own file before provenance was bounded: occurrences were "sources", without totals.
OLDER_OWN_FILE = {
    "skills": {
        "math-00001": {
            "id": "math-00001",
            "section": "math",
            "content": "Check units.",
            "helpful": 2,
            "sources": [{"sample_id": "s-1", "epoch": 1}, {"sample_id": "s-2", "epoch": 1}],
        }
    },
    "next_id": 1,
}


def test_a_reference_013_file_loads_with_its_occurrences() -> None:
    book = Skillbook.loads(json.dumps(REFERENCE_013_FILE))
    skill = book.get_skill("context-00001")
    assert skill is not None
    assert skill.content == "Answers mix units: Convert every quantity to SI first"
    assert (skill.helpful, skill.harmful, skill.neutral, skill.status) == (3, 1, 0, "active")
    assert [o["trace_id"] for o in skill.occurrences] == ["conv-123", "conv-9"]
    assert skill.occurrence_totals == {"ADD": 1, "TAG": 1}
    retired = book.get_skill("harness-00002")
    assert retired is not None
    assert (retired.content, retired.harmful, retired.status) == ("Retry a flaky tool once", 2, "invalid")


def test_export_writes_occurrences_under_the_reference_name_and_they_round_trip() -> None:
    book = Skillbook.loads(json.dumps(REFERENCE_013_FILE))
    saved = json.loads(book.dumps())["skills"]["context-00001"]
    assert saved["occurrences"][0]["trace_uid"] == "kayba-hosted:conv-123"
    assert "sources" not in saved
    again = Skillbook.loads(book.dumps()).get_skill("context-00001")
    assert again is not None
    assert (again.occurrences, again.occurrence_totals) == (
        book.get_skill("context-00001").occurrences,  # type: ignore[union-attr]
        {"ADD": 1, "TAG": 1},
    )


def test_an_older_file_of_ours_loads_its_sources_as_occurrences() -> None:
    skill = Skillbook.loads(json.dumps(OLDER_OWN_FILE)).get_skill("math-00001")
    assert skill is not None
    assert [o["sample_id"] for o in skill.occurrences] == ["s-1", "s-2"]
    assert skill.occurrence_totals == {"unknown": 2}  # they named no operation


@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [
        ("occurrences", "not a list", "'occurrences' must be a list"),
        ("occurrence_totals", {"TAG": "many"}, "'occurrence_totals' must map operations to counts"),
    ],
)
def test_malformed_provenance_in_a_file_is_named(field: str, value: object, problem: str) -> None:
    data = json.loads(json.dumps(OLDER_OWN_FILE))
    data["skills"]["math-00001"][field] = value
    with pytest.raises(SkillbookFormatError, match=f"skill 'math-00001': {problem}"):
        Skillbook.loads(json.dumps(data))


def test_every_operation_records_an_occurrence_bounded_by_provenance_keep() -> None:
    book = Skillbook()
    book.provenance_keep = 4
    source = {"batch_id": "b", "actor": "skill_manager", "insight": "x" * 1000}
    add = UpdateOperation(type="ADD", section="math", content="Check units.", insight_source=source)
    [skill_id] = book.apply_update(UpdateBatch(operations=[add])).added
    update = UpdateOperation(
        type="UPDATE", skill_id=skill_id, content="Check the units.", insight_source=source
    )
    book.apply_update(UpdateBatch(operations=[update]))
    for number in range(10):
        book.tag_skill(skill_id, "helpful", source={"sample_index": number, "actor": "reflector"})
    skill = book.get_skill(skill_id)
    assert skill is not None
    assert [o["operation_type"] for o in skill.occurrences] == ["ADD", "TAG", "TAG", "TAG"]
    assert [o.get("sample_index") for o in skill.occurrences[1:]] == [7, 8, 9]
    assert skill.occurrence_totals == {"ADD": 1, "UPDATE": 1, "TAG": 10}
    assert len(skill.occurrences[0]["insight"]) == INSIGHT_CHARS  # text is cut, not kept whole
    assert all("time" in o for o in skill.occurrences)


def test_a_crafted_source_cannot_grow_an_occurrence() -> None:
    book = Skillbook()
    crafted = {f"key{number}": {"nested": ["x" * 500]} for number in range(100)}
    skill = book.add_skill("math", "Check units.", sources=[crafted])
    [origin] = skill.occurrences
    assert len(origin) <= 18  # at most 16 keys of the source, then operation_type and time
    assert all(len(str(value)) <= 200 for value in origin.values())


def test_provenance_fields_are_the_skill_fields_the_store_keeps_apart() -> None:
    assert set(PROVENANCE_FIELDS) <= set(Skillbook().add_skill("a", "b").to_dict())


def test_the_learning_actors_are_the_stores_names() -> None:
    # Steps and the core sit below the store and name its actors themselves: the names must agree.
    assert (steps_provenance.SKILL_MANAGER, steps_provenance.REFLECTOR, DEDUP_ACTOR) == (
        actors.SKILL_MANAGER,
        actors.REFLECTOR,
        actors.DEDUP,
    )
