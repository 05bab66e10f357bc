"""Where a skill came from: its last K occurrences and its totals, bounded however long it lives.

Every ADD, UPDATE, TAG and REMOVE a skillbook applies (and every dedup merge)
records an *occurrence* on the skill it touches: a small JSON object saying
what happened and from where. Keys (all but ``operation_type`` and ``time``
are present only when known)::

    operation_type  ADD, UPDATE, TAG, REMOVE or MERGE (the reference framework's key)
    time            when it was applied (ISO-8601, UTC)
    actor           skill_manager, reflector, dedup, user:NAME, key:NAME (store/actors.py)
    batch_id        the fleet batch the sample belonged to
    epoch           the epoch of the sample
    sample_index    the sample's index in its batch (from 1)
    sample_id       the sample's own id
    trace_id        the producer's id of the trace (the trace's ``trace_id`` or ``id``)
    recipe          the recipe that learned it
    insight         the Reflector's key insight, cut to INSIGHT_CHARS characters
    merged_from     (MERGE) the ids folded into the skill

The names follow the reference framework (0.13) where they mean the same
(``operation_type``, ``trace_id``, ``epoch``), so its tools read ours, and
its ``occurrences`` load here. A skill keeps its last ``keep`` occurrences
(oldest first) and ``occurrence_totals``: how many of each operation type it
ever had, so nothing grows with the skill's age.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .skill import Skill, utc_now

__all__ = [
    "DEFAULT_KEEP",
    "bounded_occurrences",
    "INSIGHT_CHARS",
    "PROVENANCE_FIELDS",
    "PROVENANCE_METADATA_KEY",
    "bounded_source",
    "check_keep",
    "merge_occurrences",
    "occurrence_of",
    "record_occurrence",
    "totals_of",
]

DEFAULT_KEEP = 5  # occurrences a skill keeps (ACE_PROVENANCE_KEEP on a fleet)
INSIGHT_CHARS = 200  # of the Reflector's key insight kept per occurrence
_VALUE_CHARS = 200  # any other text value of an occurrence is cut to this
_MAX_KEYS = 16  # keys of one occurrence: a crafted source cannot grow it
# The skill fields that hold provenance: the Redis store keeps them beside the skill image.
PROVENANCE_FIELDS = ("occurrences", "occurrence_totals")
# The ctx.metadata key under which a fleet worker's run_step hands UpdateStep and TagStep
# what only the worker knows (batch_id, epoch, sample_index, recipe, trace_id); read by
# steps/provenance_source.py. In-process runners leave it unset.
PROVENANCE_METADATA_KEY = "ace.provenance"


def check_keep(keep: int) -> int:
    """Return ``keep`` if it is a valid number of occurrences to keep, else raise ValueError."""
    if isinstance(keep, bool) or not isinstance(keep, int) or keep < 1:
        raise ValueError(f"the number of occurrences a skill keeps must be an int >= 1, got {keep!r}")
    return keep


def _bounded_value(value: Any) -> Any:
    if isinstance(value, str):
        return value[:_VALUE_CHARS]
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return [v[:_VALUE_CHARS] for v in value[:_MAX_KEYS]]
    return str(value)[:_VALUE_CHARS]  # nested objects are not provenance: keep a short text


def bounded_source(source: Mapping[str, Any] | None) -> dict[str, Any]:
    """``source`` with at most _MAX_KEYS keys and every value small (text cut, objects as short text)."""
    if not source:
        return {}
    return {str(key): _bounded_value(value) for key, value in list(source.items())[:_MAX_KEYS]}


def occurrence_of(
    operation_type: str, source: Mapping[str, Any] | None, time: str | None = None
) -> dict[str, Any]:
    """One occurrence: ``operation_type``, the bounded ``source`` keys, and the time (now by default)."""
    occurrence = bounded_source(source)
    occurrence["operation_type"] = operation_type
    occurrence["time"] = time or occurrence.get("time") or utc_now()
    return occurrence


def record_occurrence(skill: Skill, occurrence: dict[str, Any], keep: int) -> None:
    """Append ``occurrence`` to the skill, keeping ``keep`` of them, and count it in its totals.

    Kept: the skill's origin (its first occurrence, when that is the ADD that made it) and
    the newest after it, ``keep`` in all; the totals count every occurrence ever recorded.
    """
    kind = str(occurrence.get("operation_type", "unknown"))
    skill.occurrence_totals[kind] = skill.occurrence_totals.get(kind, 0) + 1
    skill.occurrences.append(occurrence)
    skill.occurrences = bounded_occurrences(skill.occurrences, keep)


def bounded_occurrences(occurrences: list[dict[str, Any]], keep: int) -> list[dict[str, Any]]:
    """The ``keep`` occurrences a skill keeps of ``occurrences`` (oldest first): its origin and the newest."""
    if len(occurrences) <= keep:
        return occurrences
    if keep > 1 and occurrences[0].get("operation_type") == "ADD":
        return [occurrences[0], *occurrences[len(occurrences) - keep + 1 :]]
    return occurrences[-keep:]


def merge_occurrences(
    keep_skill: Skill, merged: Iterable[Skill], occurrence: dict[str, Any], keep: int
) -> None:
    """Fold the merged skills' provenance into ``keep_skill``: totals add up, the newest ``keep`` stay.

    The MERGE itself is recorded last (``occurrence``), so it is always among those kept.
    """
    pooled = list(keep_skill.occurrences)
    for skill in merged:
        pooled.extend(skill.occurrences)
        for kind, count in skill.occurrence_totals.items():
            keep_skill.occurrence_totals[kind] = keep_skill.occurrence_totals.get(kind, 0) + count
    # Times are ISO-8601 in UTC, so they sort as text; an occurrence without one sorts first.
    pooled.sort(key=lambda item: str(item.get("time", "")))
    keep_skill.occurrences = pooled
    record_occurrence(keep_skill, occurrence, keep)


def totals_of(occurrences: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """Totals by operation type counted from ``occurrences`` (for files written without totals)."""
    totals: dict[str, int] = {}
    for item in occurrences:
        kind = str(item.get("operation_type") or "unknown")
        totals[kind] = totals.get(kind, 0) + 1
    return totals
