"""TOON (Token-Oriented Object Notation) tables with a tab delimiter, for compact prompts.

A uniform list of records becomes one header and one line per record::

    skills[2\t]{id\tsection\tcontent}:
      general-00001\tgeneral\tCheck units first
      math-00002\tmath\t"Quote\\tthis"

A value is quoted (JSON string escapes) only when it would be ambiguous bare:
empty, padded with spaces, holding a tab, newline, quote or backslash, or
looking like a number, boolean or null.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

__all__ = ["encode_row", "encode_table", "first_cells", "table_header"]

_NEEDS_QUOTES = re.compile(r'[\t\n\r"\\]')
_LOOKS_LITERAL = re.compile(r"^(?:true|false|null|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)$")


def _cell(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    text = "" if value is None else str(value)
    if not text or text != text.strip() or _NEEDS_QUOTES.search(text) or _LOOKS_LITERAL.match(text):
        return json.dumps(text, ensure_ascii=False)
    return text


def table_header(name: str, columns: Sequence[str], count: int) -> str:
    """The header line of a table called ``name`` of ``count`` rows."""
    return f"{name}[{count}\t]{{{chr(9).join(columns)}}}:"


def encode_row(row: Sequence[object]) -> str:
    """One row's line of a table, indent included (values in column order)."""
    return "  " + "\t".join(_cell(v) for v in row)


def encode_table(name: str, columns: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Encode ``rows`` (one value per column) as a tab-delimited TOON table called ``name``."""
    return "\n".join([table_header(name, columns, len(rows)), *(encode_row(row) for row in rows)])


def first_cells(table: str) -> set[str]:
    """The first cell of every row of a table :func:`encode_table` made (quoted cells decoded)."""
    cells = set()
    for line in table.split("\n")[1:]:
        if line.startswith("  "):  # a row; a note after the table is not indented
            cell = line[2:].split("\t", 1)[0]  # a quoted cell holds no bare tab
            cells.add(str(json.loads(cell)) if cell.startswith('"') else cell)
    return cells
