"""The skill id scheme and the citation pattern that must match every id it produces.

An id is ``{prefix}-{NNNNN}``: the first word of the section, lower-cased, with
every character outside ``[a-z0-9_]`` turned into ``_``, then a zero-padded
number (five digits, more once past 99999).
"""

from __future__ import annotations

import re

__all__ = ["CITATION_PATTERN", "extract_cited_skill_ids", "format_skill_id", "is_skill_id", "section_prefix"]

_NOT_ID_CHAR = re.compile(r"[^a-z0-9_]")
# Every id format_skill_id can produce, in square brackets as the Agent cites it.
CITATION_PATTERN = re.compile(r"\[([a-z0-9_]+-\d{5,})\]")
_WHOLE_ID = re.compile(r"[a-z0-9_]+-\d{5,}")


def is_skill_id(text: str) -> bool:
    """True if ``text`` is an id the scheme could produce (and so a citation can name)."""
    return _WHOLE_ID.fullmatch(text) is not None


def section_prefix(section: str) -> str:
    """The id prefix of ``section``: ``"Data-Loading tips"`` -> ``"data_loading"``."""
    words = section.strip().split()
    prefix = _NOT_ID_CHAR.sub("_", words[0].lower()) if words else ""
    return prefix or "skill"


def format_skill_id(section: str, number: int) -> str:
    """The id of the ``number``-th skill allocated, filed under ``section``."""
    return f"{section_prefix(section)}-{number:05d}"


def extract_cited_skill_ids(text: str) -> list[str]:
    """Skill ids cited as ``[id]`` in ``text``, first occurrence order, without repeats."""
    return list(dict.fromkeys(CITATION_PATTERN.findall(text or "")))
