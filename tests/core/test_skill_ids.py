"""Skill ids, and the citation pattern that must match every id the skillbook hands out."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ace_workers.core import CITATION_PATTERN, Skillbook, extract_cited_skill_ids, format_skill_id

SECTIONS = [
    ("data-loading", "data_loading-00042"),
    ("Edge Cases", "edge-00042"),
    ("Ünïcode stuff", "_n_code-00042"),
    ("  ", "skill-00042"),
    ("", "skill-00042"),
]


@pytest.mark.parametrize(("section", "expected"), SECTIONS)
def test_format_skill_id_is_first_word_lowercased_restricted_and_numbered(
    section: str, expected: str
) -> None:
    assert format_skill_id(section, 42) == expected


def test_format_skill_id_keeps_every_digit_past_99999() -> None:
    assert format_skill_id("general", 123456) == "general-123456"


@pytest.mark.parametrize("section", [section for section, _ in SECTIONS])
def test_ids_generated_by_the_skillbook_are_matched_by_the_citation_pattern(section: str) -> None:
    skill = Skillbook().add_skill(section, "Some strategy")
    assert CITATION_PATTERN.fullmatch(f"[{skill.id}]")
    assert extract_cited_skill_ids(f"I used [{skill.id}] here.") == [skill.id]


@settings(database=None)
@given(section=st.text(), number=st.integers(min_value=0, max_value=10**15))
def test_any_formatted_id_is_extracted_from_a_citation(section: str, number: int) -> None:
    skill_id = format_skill_id(section, number)
    assert extract_cited_skill_ids(f"use [{skill_id}] now") == [skill_id]


def test_extracted_citations_keep_first_occurrence_order_without_repeats() -> None:
    text = "First [math-00002], then [general-00001], again [math-00002] and [general-00001]."
    assert extract_cited_skill_ids(text) == ["math-00002", "general-00001"]
