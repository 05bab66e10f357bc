"""SIMULATION: reading the real role prompts back, as the simulated LLM must.

The roles' templates (:mod:`ace_workers.roles.prompts`) put each input under
a ``## Heading`` line; the skillbook is a TOON table. These helpers undo that
formatting. They are only as robust as a simulator needs: a question that
itself holds a ``## Heading`` line would confuse them.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

__all__ = ["SkillRow", "parse_sections", "parse_skill_table", "parse_tables", "section_value", "skill_row"]

_HEADING = re.compile(r"^## (.+?)\s*$", re.MULTILINE)
_TABLE_HEADER = re.compile(r"^(?P<name>\w+)\[\d+\t\]\{(?P<columns>[^}]*)\}:\s*$")
_NONE = "(none)"


@dataclass(frozen=True)
class SkillRow:
    """One skill as the prompt shows it."""

    id: str
    section: str
    content: str
    helpful: int = 0
    harmful: int = 0
    neutral: int = 0

    @property
    def net_votes(self) -> int:
        """Helpful minus harmful votes."""
        return self.helpful - self.harmful


def parse_sections(prompt: str) -> dict[str, str]:
    """The body of every ``## Heading`` section, keyed by heading; the first of a repeat wins."""
    sections: dict[str, str] = {}
    matches = list(_HEADING.finditer(prompt))
    for match, following in zip(matches, [*matches[1:], None], strict=True):
        end = following.start() if following is not None else len(prompt)
        sections.setdefault(match.group(1), prompt[match.end() : end].strip())
    return sections


def section_value(sections: dict[str, str], heading: str) -> str:
    """A section's body, with the roles' "(none)" placeholder read as empty."""
    body = sections.get(heading, "")
    return "" if body == _NONE else body


def _cell(raw: str) -> str:
    # TOON quotes a cell with JSON escapes when it would be ambiguous bare.
    if raw.startswith('"'):
        value = json.loads(raw)
        return value if isinstance(value, str) else str(value)
    return raw


def _count(raw: str) -> int:
    try:
        return int(raw)
    except ValueError:
        return 0


def parse_skill_table(text: str) -> list[SkillRow]:
    """The skills of a TOON ``skills[N\\t]{...}:`` table; [] for "(no skills yet)" or other text."""
    lines = text.splitlines()
    header = _TABLE_HEADER.match(lines[0].strip()) if lines else None
    if header is None:
        return []
    return [skill_row(record) for record in _records(header.group("columns"), lines[1:])]


def parse_tables(text: str) -> dict[str, list[dict[str, str]]]:
    """The rows of every TOON table in ``text``, by table name (tables of one name joined)."""
    tables: dict[str, list[dict[str, str]]] = {}
    lines = text.splitlines()
    for position, line in enumerate(lines):
        header = _TABLE_HEADER.match(line.strip())
        if header is not None:
            rows = _records(header.group("columns"), lines[position + 1 :])
            tables.setdefault(header.group("name"), []).extend(rows)
    return tables


def skill_row(record: dict[str, str]) -> SkillRow:
    """A skills table's row as a SkillRow (missing counts read as 0)."""
    return SkillRow(
        id=record.get("id", ""),
        section=record.get("section", ""),
        content=record.get("content", ""),
        helpful=_count(record.get("helpful", "0")),
        harmful=_count(record.get("harmful", "0")),
        neutral=_count(record.get("neutral", "0")),
    )


def _records(columns: str, lines: list[str]) -> list[dict[str, str]]:
    """The rows under a table header: each indented line, cells by column, up to the first other line."""
    names = columns.split("\t")
    records = []
    for line in lines:
        if not line.startswith("  "):
            break
        records.append(dict(zip(names, (_cell(c) for c in line[2:].split("\t")), strict=False)))
    return records
