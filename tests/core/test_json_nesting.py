"""JSON nesting is bounded before parsing, at every way in: one error naming the limit, no RecursionError."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from ace_workers.core import UpdateBatch
from ace_workers.core.consolidation import ConsolidationBatch
from ace_workers.core.json_nesting import MAX_JSON_DEPTH, loads_bounded
from ace_workers.core.jsonl import SkippedLines, iter_json_lines
from ace_workers.errors import InvalidUpdateError, JsonNestingError

DEEP = "[" * 200_000 + "]" * 200_000


def test_brackets_inside_strings_do_not_count_and_the_limit_itself_is_read() -> None:
    at_limit = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    assert loads_bounded('{"a": ["[[[[", "\\"{{"]}') == {"a": ["[[[[", '"{{']}
    assert loads_bounded(at_limit.encode()) is not None


def test_one_level_over_the_limit_is_refused_naming_where() -> None:
    over = "[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1)
    with pytest.raises(JsonNestingError, match=f"deeper than {MAX_JSON_DEPTH} levels \\(at character 200\\)"):
        loads_bounded(over)


@pytest.mark.parametrize("parse", [UpdateBatch.from_json, ConsolidationBatch.from_dict])
def test_an_llm_batch_nested_too_deeply_is_an_invalid_update(parse: Callable[[str], object]) -> None:
    with pytest.raises(InvalidUpdateError, match="nested deeper than 200 levels"):
        parse(DEEP)


def test_a_jsonl_line_nested_too_deeply_costs_that_line_only() -> None:
    skipped = SkippedLines("deep.jsonl")
    values = list(iter_json_lines([DEEP.encode(), b'{"ok": 1}'], skipped))
    assert values == [(2, {"ok": 1})]
    assert skipped.first == [(1, "not JSON: nested too deeply to read")]
