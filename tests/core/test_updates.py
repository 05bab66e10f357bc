"""UpdateBatch parsing: round trips, case-insensitive types, and errors that name the location."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from ace_workers.core import UpdateBatch, UpdateOperation
from ace_workers.errors import InvalidUpdateError


def test_batch_round_trips_through_json() -> None:
    batch = UpdateBatch(
        reasoning="Units mattered.",
        operations=[
            UpdateOperation(type="ADD", section="general", content="Check units", justification="why"),
            UpdateOperation(type="TAG", skill_id="general-00001", metadata={"helpful": 1}),
            UpdateOperation(type="UPDATE", skill_id="math-00002", content="x", insight_source={"epoch": 2}),
            UpdateOperation(type="REMOVE", skill_id="edge-00003"),
        ],
    )
    assert UpdateBatch.from_json(batch.to_json()) == batch


def test_operation_type_is_case_insensitive() -> None:
    batch = UpdateBatch.from_json({"operations": [{"type": " add ", "section": "general", "content": "x"}]})
    assert batch.operations[0].type == "ADD"


@pytest.mark.parametrize("text", ['{"operations": [', "not json at all"], ids=["truncated", "prose"])
def test_from_json_of_invalid_json_raises_invalid_update_error(text: str) -> None:
    with pytest.raises(InvalidUpdateError, match=r"not valid JSON.*line 1 column") as info:
        UpdateBatch.from_json(text)
    assert not isinstance(info.value, ValidationError)


def test_from_json_of_bytes_that_are_not_utf8_raises_invalid_update_error() -> None:
    with pytest.raises(InvalidUpdateError):
        UpdateBatch.from_json(b'{"reasoning": "caf\xe9"}')


def test_from_json_of_a_wrong_shape_names_the_location() -> None:
    data = {"operations": [{"type": "ADD", "section": "a", "content": "b"}, {"section": "general"}]}
    with pytest.raises(InvalidUpdateError, match=r"operations\.1\.type") as info:
        UpdateBatch.from_json(json.dumps(data))
    assert info.value.index == 1
    assert not isinstance(info.value, ValidationError)


def test_from_json_rejects_a_well_typed_but_invalid_operation() -> None:
    data = {
        "operations": [
            {"type": "ADD", "section": "a", "content": "b"},
            {"type": "TAG", "skill_id": "a-00001"},
        ]
    }
    with pytest.raises(InvalidUpdateError) as info:
        UpdateBatch.from_json(data)
    assert (info.value.index, info.value.operation_type) == (1, "TAG")
