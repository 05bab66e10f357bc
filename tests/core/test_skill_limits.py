"""Skill limits in the core: an over-long ADD or UPDATE is refused as that operation, not the batch."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ace_workers.core import Skillbook
from ace_workers.core.consolidation import ConsolidationBatch
from ace_workers.core.skill_limits import MAX_CONTENT_CHARS, MAX_SECTION_CHARS
from ace_workers.errors import InvalidUpdateError, SkillbookFormatError, SkillTooLongError
from tests.support.operations import add, batch, tag, update

LONG = "x" * (MAX_CONTENT_CHARS + 1)


def test_an_over_long_add_is_left_out_and_the_rest_of_the_batch_applies() -> None:
    book = Skillbook()
    report = book.apply_update(batch(add("Check units."), add(LONG), add("Cite sources.")))
    assert len(report.added) == 2
    assert [(index, kind) for index, kind, _ in report.too_long] == [(1, "ADD")]
    assert f"{MAX_CONTENT_CHARS + 1} characters, over the {MAX_CONTENT_CHARS}" in report.too_long[0][2]
    assert all(len(skill.content) <= MAX_CONTENT_CHARS for skill in book.skills())
    assert report.skipped_ops == 1


def test_an_over_long_section_and_update_are_left_out_and_the_vote_still_counts() -> None:
    book = Skillbook()
    (first,) = book.apply_update(batch(add("Check units."))).added
    report = book.apply_update(
        batch(update(first, LONG), add("Fine.", section="s" * (MAX_SECTION_CHARS + 1)), tag(first, helpful=1))
    )
    assert [(index, kind) for index, kind, _ in report.too_long] == [(0, "UPDATE"), (1, "ADD")]
    skill = book.get_skill(first)
    assert skill is not None
    assert skill.content == "Check units."
    assert skill.helpful == 1


def test_a_single_add_or_update_over_the_limit_raises_naming_the_limit() -> None:
    book = Skillbook()
    with pytest.raises(SkillTooLongError, match=f"over the {MAX_CONTENT_CHARS}"):
        book.add_skill("general", LONG)
    skill = book.add_skill("general", "Check units.")
    with pytest.raises(SkillTooLongError, match="content has"):
        book.update_skill(skill.id, LONG)
    assert len(book) == 1


def test_a_file_with_an_over_long_skill_is_refused_naming_the_skill(tmp_path: Path) -> None:
    path = tmp_path / "book.json"
    path.write_text(json.dumps({"skills": {"general-00001": {"section": "general", "content": LONG}}}))
    with pytest.raises(SkillbookFormatError, match=r"skill 'general-00001': its content has 4001 characters"):
        Skillbook.load_from_file(path)


def test_a_file_nested_too_deeply_is_one_format_error_not_a_recursion_error(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text("[" * 200_000 + "]" * 200_000)
    with pytest.raises(SkillbookFormatError, match="nested deeper than 200 levels"):
        Skillbook.load_from_file(path)


def test_a_consolidation_rewriting_a_skill_over_the_limit_is_invalid_before_it_applies() -> None:
    with pytest.raises(InvalidUpdateError, match="new_content"):
        ConsolidationBatch.from_dict(
            {"operations": [{"type": "UPDATE", "skill_id": "a-00001", "new_content": LONG}]}
        )
