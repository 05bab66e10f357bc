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

__all__ = ["SkillRow", "parse_sections", "parse_skill_table", "section_value"]

_HEADING = re.compile(r"^## (.+?)\s*$", re.MULTILINE)
_TABLE_HEADER = re.compile(r"^\w+\[\d+\t\]\{(?P<columns>[^}]*)\}:\s*$")
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
    columns = header.group("columns").split("\t")
    rows = []
    for line in lines[1:]:
        if not line.startswith("  "):
            break
        record = dict(zip(columns, (_cell(c) for c in line[2:].split("\t")), strict=False))
        rows.append(
            SkillRow(
                id=record.get("id", ""),
                section=record.get("section", ""),
                content=record.get("content", ""),
                helpful=_count(record.get("helpful", "0")),
                harmful=_count(record.get("harmful", "0")),
                neutral=_count(record.get("neutral", "0")),
            )
        )
    return rows
