"""A batch's failed samples as ``learn`` and ``status`` show them: the first few, and where the rest are."""

from __future__ import annotations

from typing import Any

from ..errors import one_line
from .output import console, printable

__all__ = ["SHOWN_ERRORS", "failure_lines", "print_failures"]

# A batch can fail by the thousand (a wrong model fails every sample): the first few say why.
SHOWN_ERRORS = 5


def failure_lines(batch_id: str, errors: list[dict[str, Any]], *, total: int) -> list[str]:
    """The first SHOWN_ERRORS errors, one line each; then how many more and the command that lists them.

    When every one of the batch's ``total`` samples failed, the last line says so, with the first error.
    """
    lines = [_describe(error) for error in errors[:SHOWN_ERRORS]]
    if len(errors) > SHOWN_ERRORS:
        lines.append(
            f"and {len(errors) - SHOWN_ERRORS} more (ace-workers dead-letters list --batch {batch_id})"
        )
    if errors and len(errors) >= total:
        first = errors[0]
        lines.append(f"all {total} samples failed; first error: {first['step']}: {one_line(first['error'])}")
    return lines


def print_failures(batch_id: str, errors: list[dict[str, Any]], *, total: int) -> None:
    """Print :func:`failure_lines` in red; read from Redis, they are escaped, never read as markup."""
    for line in failure_lines(batch_id, errors, total=total):
        console.print(printable(line), style="red", markup=False)


def _describe(error: dict[str, Any]) -> str:
    return f"epoch {error['epoch']} sample {error['index']}: {error['step']}: {one_line(error['error'])}"
