"""Skill objects of other file shapes, read as ours: the reference framework's 0.13 skills, old provenance.

The reference framework (0.13, ``"schema_version": "2"``) writes a skill as
``issue`` (the situation) and ``insight`` (what to do), ``helpful_count``
and friends, ``active``, and its provenance as ``occurrences`` (trace
identities: ``trace_uid``, ``source_system``, ``trace_id``, ``epoch``,
``operation_type``, ...). Such a skill loads as one of ours: its content is
"issue: insight", its counters and status carry over, its occurrences are
kept as they are. Files of either side that call the occurrences ``sources``
load too (Skill.from_dict maps the name).
"""

from __future__ import annotations

from typing import Any

from ..errors import SkillbookFormatError
from .skill_provenance import totals_of

__all__ = ["clean_provenance", "from_reference_skill"]

_COUNTERS = {"helpful": "helpful_count", "harmful": "harmful_count", "neutral": "neutral_count"}


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def from_reference_skill(raw: dict[str, Any]) -> dict[str, Any]:
    """A reference 0.13 skill object as our file format's; any other object is returned unchanged."""
    if "content" in raw or not ("issue" in raw or "insight" in raw):
        return raw
    issue, insight = _text(raw.get("issue")), _text(raw.get("insight"))
    mapped = {**raw, "content": f"{issue}: {insight}" if issue and insight else issue or insight}
    for ours, theirs in _COUNTERS.items():
        if ours not in raw and isinstance(raw.get(theirs), int):
            mapped[ours] = raw[theirs]
    if "status" not in raw and raw.get("active") is False:
        mapped["status"] = "invalid"
    return mapped


def clean_provenance(raw: dict[str, Any], key: str, source: str) -> dict[str, Any]:
    """``raw`` with its occurrences a list of objects and its totals counts (derived when absent).

    Raises:
        SkillbookFormatError: the occurrences are not a list, or the totals not an object of counts.
    """
    name = "occurrences" if "occurrences" in raw else "sources"
    occurrences = raw.get(name)
    if occurrences is None:
        occurrences = []
    if not isinstance(occurrences, list):
        raise SkillbookFormatError(
            source, f"skill {key!r}: {name!r} must be a list, got {type(occurrences).__name__}"
        )
    occurrences = [item for item in occurrences if isinstance(item, dict)]
    totals = raw.get("occurrence_totals")
    if totals is None:
        totals = totals_of(occurrences)
    if not isinstance(totals, dict) or not all(
        isinstance(count, int) and not isinstance(count, bool) for count in totals.values()
    ):
        raise SkillbookFormatError(
            source, f"skill {key!r}: 'occurrence_totals' must map operations to counts"
        )
    return {**raw, "occurrences": occurrences, "occurrence_totals": {str(k): v for k, v in totals.items()}}
