"""apply_update: all or nothing, never overwriting, tolerant of hallucinated ids, thread-safe."""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import pytest

import ace_workers.core.skillbook as skillbook_module
from ace_workers.core import ApplyReport, Skillbook, UpdateBatch, UpdateOperation
from ace_workers.errors import InvalidUpdateError

T = TypeVar("T")


def _add(content: str, section: str = "general", **fields: object) -> UpdateOperation:
    return UpdateOperation(type="ADD", section=section, content=content, **fields)


def _tag(skill_id: str, **counts: int) -> UpdateOperation:
    return UpdateOperation(type="TAG", skill_id=skill_id, metadata=counts)


BAD_THIRD_OPERATIONS = {
    "add-with-empty-section": ("ADD", UpdateOperation(type="ADD", section="  ", content="Orphan")),
    "unknown-type": ("MERGE", UpdateOperation(type="MERGE", skill_id="general-00001", content="x")),
    "update-without-content": ("UPDATE", UpdateOperation(type="UPDATE", skill_id="general-00001")),
    "tag-with-unknown-counter": ("TAG", _tag("general-00001", bogus=1)),
    "tag-with-negative-count": ("TAG", _tag("general-00001", helpful=-1)),
    "remove-without-skill-id": ("REMOVE", UpdateOperation(type="REMOVE")),
}


def _batch_with_bad_third(bad: UpdateOperation) -> UpdateBatch:
    return UpdateBatch(
        operations=[
            _add("Valid new strategy"),
            _tag("general-00001", helpful=2),
            bad,
            UpdateOperation(type="REMOVE", skill_id="math-00002"),
        ]
    )


@pytest.mark.parametrize("case", BAD_THIRD_OPERATIONS, ids=list(BAD_THIRD_OPERATIONS))
def test_batch_with_an_invalid_operation_leaves_the_skillbook_exactly_unchanged(
    book: Skillbook, case: str
) -> None:
    _, bad = BAD_THIRD_OPERATIONS[case]
    before = book.to_dict()
    with pytest.raises(InvalidUpdateError):
        book.apply_update(_batch_with_bad_third(bad))
    assert book.to_dict() == before


@pytest.mark.parametrize("case", BAD_THIRD_OPERATIONS, ids=list(BAD_THIRD_OPERATIONS))
def test_invalid_update_error_names_the_bad_operation(book: Skillbook, case: str) -> None:
    op_type, bad = BAD_THIRD_OPERATIONS[case]
    with pytest.raises(InvalidUpdateError) as info:
        book.apply_update(_batch_with_bad_third(bad))
    assert (info.value.index, info.value.operation_type) == (2, op_type)
    assert f"operation #2 ({op_type})" in str(info.value)


def test_add_with_an_existing_skill_id_keeps_the_old_skill_and_gets_a_fresh_id(book: Skillbook) -> None:
    report = book.apply_update(UpdateBatch(operations=[_add("Imposter", skill_id="general-00001")]))
    [new_id] = report.added
    assert new_id != "general-00001"
    assert book.get_skill("general-00001").content == "Check units"
    assert book.get_skill(new_id).content == "Imposter"
    assert len(book) == 3


def test_llm_chosen_id_ahead_of_the_counter_is_never_generated_again() -> None:
    book = Skillbook()
    book.add_skill("general", "One")
    book.add_skill("general", "Two")
    assert book.to_dict()["next_id"] == 2  # as in the reference: the last number issued
    book.apply_update(UpdateBatch(operations=[_add("Seven", skill_id="general-00007")]))
    for n in range(10):  # enough generated ids to pass 7
        book.apply_update(UpdateBatch(operations=[_add(f"Generated {n}")]))
    ids = [s.id for s in book.skills()]
    assert len(ids) == 13
    assert len(set(ids)) == 13
    assert book.get_skill("general-00007").content == "Seven"


def _batch_naming_unknown_ids() -> UpdateBatch:
    return UpdateBatch(
        operations=[
            UpdateOperation(type="UPDATE", skill_id="ghost-00091", content="Rewritten"),
            _add("Fresh strategy"),
            _tag("ghost-00092", harmful=1),
            _tag("general-00001", helpful=1),
            UpdateOperation(type="REMOVE", skill_id="ghost-00093"),
        ]
    )


def test_operations_naming_unknown_ids_are_skipped_and_reported(book: Skillbook) -> None:
    report = book.apply_update(_batch_naming_unknown_ids())
    assert report.skipped_ops == 3
    assert report.skipped == [
        (0, "UPDATE", "ghost-00091"),
        (2, "TAG", "ghost-00092"),
        (4, "REMOVE", "ghost-00093"),
    ]


def test_valid_operations_apply_alongside_skipped_unknown_ids(book: Skillbook) -> None:
    report = book.apply_update(_batch_naming_unknown_ids())
    assert book.get_skill("general-00001").helpful == 1
    assert [book.get_skill(i).content for i in report.added] == ["Fresh strategy"]
    assert report.tagged == ["general-00001"]
    assert len(book) == 3


def test_skipped_operations_are_logged_at_warning_naming_the_id(
    book: Skillbook, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="ace_workers.core.skillbook")
    book.apply_update(_batch_naming_unknown_ids())
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    for ghost in ("ghost-00091", "ghost-00092", "ghost-00093"):
        assert any(ghost in message for message in warnings), (ghost, warnings)


def _then_yield(function: Callable[..., T]) -> Callable[..., T]:
    def call_then_yield(*args: Any, **kwargs: Any) -> T:
        result = function(*args, **kwargs)
        time.sleep(0.0001)  # a real sleep, so the waiting thread gets the GIL
        return result

    return call_then_yield


def test_concurrent_batches_lose_no_skill_and_no_tag(monkeypatch: pytest.MonkeyPatch) -> None:
    threads, batches = 8, 50
    book = Skillbook()
    shared = book.add_skill("shared", "Shared strategy").id
    start = threading.Barrier(threads)

    def apply_batches(worker: int) -> list[ApplyReport]:
        start.wait()
        return [
            book.apply_update(
                UpdateBatch(operations=[_add(f"worker {worker} batch {n}"), _tag(shared, helpful=1)])
            )
            for n in range(batches)
        ]

    # Hand the GIL to another thread after reading the id counter and again before the new
    # skill is stored: without the lock, two threads then reliably claim the same id.
    monkeypatch.setattr(skillbook_module, "format_skill_id", _then_yield(skillbook_module.format_skill_id))
    monkeypatch.setattr(skillbook_module, "Skill", _then_yield(skillbook_module.Skill))
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible to expose races
    try:
        with ThreadPoolExecutor(max_workers=threads) as pool:
            reports = [
                r
                for future in [pool.submit(apply_batches, w) for w in range(threads)]
                for r in future.result()
            ]
    finally:
        sys.setswitchinterval(interval)

    added = [skill_id for report in reports for skill_id in report.added]
    assert len(added) == threads * batches
    assert len(set(added)) == threads * batches
    assert len(book) == threads * batches + 1
    assert book.get_skill(shared).helpful == threads * batches


def test_an_add_restating_an_active_skill_of_its_section_is_skipped_and_counted(book: Skillbook) -> None:
    before = book.to_dict()
    report = book.apply_update(
        UpdateBatch(operations=[_add("  check UNITS. "), _add("Check units", section="other")])
    )
    assert report.duplicates == [(0, "general-00001")]
    assert report.skipped_ops == 1
    assert len(report.added) == 1
    assert book.get_skill(report.added[0]).section == "other"
    assert before["skills"]["general-00001"] == book.to_dict()["skills"]["general-00001"]
