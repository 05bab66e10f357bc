"""Reading the role prompts back: sections and the TOON skill table."""

from __future__ import annotations

from ace_workers.core import Skillbook
from ace_workers.sim.parsing import SkillRow, parse_sections, parse_skill_table, section_value


def test_skill_table_round_trips_awkward_content() -> None:
    book = Skillbook()
    book.add_skill("math", 'Quote "this"\tand tab')
    book.add_skill("data-loading", "123")  # looks like a number: TOON quotes it
    book.tag_skill("math-00001", "helpful", 3)
    book.tag_skill("math-00001", "harmful")
    rows = parse_skill_table(book.as_prompt())
    assert rows == [
        SkillRow("math-00001", "math", 'Quote "this"\tand tab', helpful=3, harmful=1),
        SkillRow("data_loading-00002", "data-loading", "123"),
    ]
    assert rows[0].net_votes == 2


def test_an_empty_skillbook_has_no_rows() -> None:
    assert parse_skill_table(Skillbook().as_prompt()) == []
    assert parse_skill_table("") == []


def test_sections_split_on_headings_and_none_reads_empty() -> None:
    sections = parse_sections("# Title\nintro\n\n## Question\nWhy?\nReally.\n\n## Feedback\n(none)\n")
    assert sections == {"Question": "Why?\nReally.", "Feedback": "(none)"}
    assert section_value(sections, "Feedback") == ""
    assert section_value(sections, "Missing") == ""
