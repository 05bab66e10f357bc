"""Skillbook dicts compared without what differs by design: provenance, or the wall-clock times."""

from __future__ import annotations

import copy
from typing import Any

from ace_workers.core.skill_provenance import PROVENANCE_FIELDS


def without_provenance(data: dict[str, Any]) -> dict[str, Any]:
    """A skillbook's ``to_dict()`` with no skill's occurrences and totals (cached snapshots, diffs)."""
    stripped = copy.deepcopy(data)
    for skill in stripped["skills"].values():
        for name in PROVENANCE_FIELDS:
            skill.pop(name, None)
    return stripped


def skills_without_provenance(data: dict[str, Any]) -> dict[str, Any]:
    """The ``skills`` of a skillbook's ``to_dict()``, without provenance."""
    skills: dict[str, Any] = without_provenance(data)["skills"]
    return skills


def without_times(data: dict[str, Any]) -> dict[str, Any]:
    """A skillbook's ``to_dict()`` with no skill's created/updated times nor its occurrences' times."""
    stripped = copy.deepcopy(data)
    for skill in stripped["skills"].values():
        skill.pop("created_at", None)
        skill.pop("updated_at", None)
        for occurrence in skill.get("occurrences", []):
            occurrence.pop("time", None)
    return stripped
