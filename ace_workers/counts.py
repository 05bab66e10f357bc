"""A count and its noun in words, the plural right: "1 skill", "2 skills"."""

from __future__ import annotations

__all__ = ["counted", "noun_for"]


def noun_for(count: int, noun: str, plural: str | None = None) -> str:
    """``noun`` as ``count`` of them read: "field" for 1, "fields" otherwise (for lists shown after it)."""
    return noun if count == 1 else plural or noun + "s"


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``count`` with ``noun``, plural unless it is 1 (``plural`` when adding an s is wrong)."""
    return f"{count:,} {noun_for(count, noun, plural)}"
