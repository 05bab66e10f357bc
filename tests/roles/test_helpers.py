"""Role helpers: optional values, the cited-skills excerpt, trace rendering."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ace_workers.core import Skillbook, SkillbookView
from ace_workers.core.skill_ids import extract_cited_skill_ids as core_extract_cited_skill_ids
from ace_workers.roles import (
    MAX_TRACE_CHARS,
    extract_cited_skill_ids,
    format_optional,
    make_skillbook_excerpt,
    render_trace,
)


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, "(none)"), ("", "(none)"), ([], "(none)"), (0, "(none)"), ("ok", "ok"), (3, "3")],
)
def test_format_optional(value: object, expected: str) -> None:
    assert format_optional(value) == expected


def test_excerpt_lists_existing_cited_skills_once_in_citation_order(skillbook: Skillbook) -> None:
    ids = ["math-00003", "nope-00009", "data_loading-00001", "math-00003"]
    excerpt = make_skillbook_excerpt(SkillbookView(skillbook), ids)
    assert excerpt.splitlines() == [
        "[math-00003] Round only the final result.",
        "[data_loading-00001] Stream files larger than memory in chunks.",
    ]
    assert make_skillbook_excerpt(skillbook, []) == ""


def test_extract_cited_skill_ids_is_the_core_function() -> None:
    assert extract_cited_skill_ids is core_extract_cited_skill_ids


def test_render_trace_handles_none_strings_and_json() -> None:
    assert render_trace(None) == "(none)"
    assert render_trace("raw transcript") == "raw transcript"
    trace: dict[str, Any] = {"steps": [1, 2], "when": Skillbook}
    assert json.loads(render_trace(trace))["steps"] == [1, 2]


def test_render_trace_is_bounded() -> None:
    text = render_trace("x" * (MAX_TRACE_CHARS * 3))
    assert text.startswith("x" * MAX_TRACE_CHARS)
    assert text.count("x") == MAX_TRACE_CHARS
    assert f"cut at {MAX_TRACE_CHARS} of {MAX_TRACE_CHARS * 3}" in text


def test_render_trace_falls_back_to_repr_for_what_json_cannot_hold() -> None:
    circular: list[Any] = []
    circular.append(circular)
    assert render_trace(circular) == "[[...]]"
