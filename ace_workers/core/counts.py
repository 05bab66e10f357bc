"""A count and its noun in words, the plural right: "1 skill", "2 skills"."""

from __future__ import annotations

__all__ = ["counted"]


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``count`` with ``noun``, plural unless it is 1 (``plural`` when adding an s is wrong)."""
    return f"{count:,} {noun if count == 1 else plural or noun + 's'}"
