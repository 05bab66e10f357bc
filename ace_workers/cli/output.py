"""What the commands print: the consoles, tables, one JSON document, warnings, text from Redis made safe."""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console, RenderableType
from rich.measure import Measurement
from rich.segment import Segments
from rich.table import Table

from ..core.files import write_text_atomically
from ..counts import counted

if TYPE_CHECKING:
    from ..core.skillbook import Skillbook

__all__ = [
    "console",
    "describe_fill",
    "err_console",
    "new_table",
    "print_json",
    "print_table",
    "print_warning",
    "printable",
    "write_skillbook_files",
]

# stdout carries only a command's result (a batch id, a table, a skillbook, one JSON document), so
# a script can read it; everything said along the way (warnings, skipped lines, progress) goes to
# stderr. On both, a line is never broken at the terminal's width (soft_wrap): a status or
# error line a script greps stays one line (print_table fits tables to a terminal).
console = Console(soft_wrap=True)
err_console = Console(stderr=True, soft_wrap=True)


def print_warning(message: str) -> None:
    """One warning line on stderr (``message`` printed as it is, never read as markup)."""
    err_console.print(message, style="yellow", markup=False)


# C0 and C1 control characters and DEL: a terminal acts on them (an escape sequence in a name
# read from Redis could set the window title, move the cursor or clear the screen).
_CONTROLS = {code: f"\\x{code:02x}" for code in [*range(0x20), *range(0x7F, 0xA0)]}
_CONTROLS_BUT_LINES = {code: text for code, text in _CONTROLS.items() if chr(code) not in "\n\t"}
# What JSON leaves as it is though a terminal acts on it (it escapes only C0 itself).
_JSON_CONTROLS = {code: f"\\u{code:04x}" for code in range(0x7F, 0xA0)}


def printable(text: object, *, keep_lines: bool = False) -> str:
    """``text`` read from Redis, safe for a terminal: control characters as escapes (``\\x1b``).

    Newlines and tabs are escaped too, unless ``keep_lines`` (for multi-line text such as markdown).
    """
    return str(text).translate(_CONTROLS_BUT_LINES if keep_lines else _CONTROLS)


# A text column is not narrowed below this in a terminal (nor below its longest cell, if shorter).
MIN_TEXT_WIDTH = 16
_UNLIMITED = 1_000_000


def new_table(*headers: str, wrap: Collection[str] = ()) -> Table:
    """A table of ``headers``: the columns named in ``wrap`` hold long text and may wrap, the rest
    (ids, names, numbers, times) are never cut (see :func:`print_table`)."""
    table = Table()
    for header in headers:
        table.add_column(header, no_wrap=header not in wrap, overflow="fold")
    return table


def print_table(table: Table) -> None:
    """``table`` on stdout, no cell ever cut or ellipsized.

    Piped or redirected, every cell is printed whole on one line (a script or ``less -S`` reads
    it). In a terminal too narrow for it, only the wrapping columns (``no_wrap`` False) wrap, to
    the terminal's width; when the other columns alone leave them no room, the lines run past
    the edge and the terminal folds them, rather than an id or model name losing characters.
    """
    limit = console.width if console.is_terminal else _UNLIMITED
    natural = [_natural_width(column.header, column.cells) for column in table.columns]
    whole = Measurement.get(console, console.options.update_width(_UNLIMITED), table).maximum
    frame = whole - sum(natural)  # borders and padding
    if whole > limit:
        _narrow_text_columns(table, natural, limit - frame)
    width = frame + sum(column.width or size for column, size in zip(table.columns, natural, strict=True))
    # Rendered at its own width: console.print would squeeze it into the console's width again.
    console.print(Segments(console.render(table, console.options.update_width(width))))


def _natural_width(header: RenderableType, cells: Iterable[RenderableType]) -> int:
    options = console.options.update_width(_UNLIMITED)
    return max(Measurement.get(console, options, cell).maximum for cell in [header, *cells])


def _narrow_text_columns(table: Table, natural: list[int], room: int) -> None:
    """Fix the widths of the wrapping columns so the table fits ``room``: each first gets up to
    MIN_TEXT_WIDTH (an equal part of what is left, when that is less), then a part of the rest in
    proportion to what it still lacks."""
    text = [i for i, column in enumerate(table.columns) if not column.no_wrap]
    left = room - sum(size for i, size in enumerate(natural) if i not in text)
    # At or below zero the ids alone are too wide: the lines run on, the text columns still readable.
    floor = MIN_TEXT_WIDTH if left <= 0 or left >= MIN_TEXT_WIDTH * len(text) else left // len(text)
    widths = {i: min(natural[i], floor) for i in text}
    rest = left - sum(widths.values())
    lacking = {i: natural[i] - widths[i] for i in text}
    if rest > 0 and any(lacking.values()):
        for i in text:
            widths[i] += rest * lacking[i] // sum(lacking.values())
        # What the rounding down left over goes to the column lacking the most.
        neediest = max(text, key=lambda i: natural[i] - widths[i])
        widths[neediest] = min(natural[neediest], widths[neediest] + left - sum(widths.values()))
    for i in text:
        table.columns[i].width = widths[i]


def write_skillbook_files(book: Skillbook, out: Path | None, markdown: Path | None) -> None:
    """Write ``book`` as JSON to ``out`` and as markdown to ``markdown`` (those given), each atomically.

    A path that cannot be written is a one-line error naming it; nothing half-written stays.
    """
    for path, render, param in ((out, book.dumps, "--out"), (markdown, book.as_markdown, "--markdown")):
        if path is None:
            continue
        try:
            write_text_atomically(path, render())
        except OSError as exc:
            raise typer.BadParameter(f"cannot write {path}: {exc.strerror or exc}", param_hint=param) from exc


def print_json(value: Any) -> None:
    """One JSON document on stdout, for scripts (``--json``)."""
    text = json.dumps(value, indent=2, ensure_ascii=False, default=str)
    typer.echo(text.translate(_JSON_CONTROLS))  # such characters occur only inside JSON strings


def describe_fill(name: str, fill: dict[str, int]) -> str | None:
    """One line when a skillbook is full or has left ADDs out; None otherwise."""
    active, limit, skipped = fill["active_skills"], fill["max_skills"], fill["adds_skipped_full"]
    if active < limit and not skipped:
        return None
    state = "full" if active >= limit else "below its limit now"
    return (
        f"skillbook {name!r} is {state}: {active} of {limit} active skills (ACE_MAX_SKILLBOOK_SKILLS); "
        f"{counted(skipped, 'ADD')} left out for lack of room, the rest of their batches applied"
    )
