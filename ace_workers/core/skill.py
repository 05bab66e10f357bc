"""One learned strategy, and a recorded decision about a pair of similar skills."""

from __future__ import annotations

import copy
import functools
from dataclasses import asdict, dataclass, field, fields
from datetime import UTC, datetime
from typing import Any, Literal

__all__ = ["SimilarityDecision", "Skill", "utc_now"]

SkillStatus = Literal["active", "invalid"]
TAGS = ("helpful", "harmful", "neutral")


def utc_now() -> str:
    """The current time as an ISO-8601 string in UTC."""
    return datetime.now(UTC).isoformat()


@functools.cache
def _field_names(cls: type) -> frozenset[str]:
    return frozenset(f.name for f in fields(cls))


@functools.cache
def _field_order(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in fields(cls))


def _copy_occurrences(occurrences: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # Occurrence values are scalars but for a few small lists (a file's may nest more):
    # a copy per value costs a tenth of deepcopy's walk, which 100,000 skills would feel.
    return [
        {key: copy.deepcopy(value) if isinstance(value, list | dict) else value for key, value in one.items()}
        for one in occurrences
    ]


def _known_fields(cls: type, data: dict[str, Any]) -> dict[str, Any]:
    # Files from newer reference versions carry extra keys: ignore them.
    names = _field_names(cls)
    return {key: value for key, value in data.items() if key in names}


@dataclass
class Skill:
    """A learned strategy with its helpful/harmful/neutral counters and provenance."""

    id: str
    section: str
    content: str
    helpful: int = 0
    harmful: int = 0
    neutral: int = 0
    justification: str = ""
    evidence: str = ""
    created_at: str = field(default_factory=utc_now)
    updated_at: str = field(default_factory=utc_now)
    embedding: list[float] | None = None
    status: SkillStatus = "active"
    # Provenance (core/provenance.py): the last K occurrences, oldest first, and totals by operation.
    occurrences: list[dict[str, Any]] = field(default_factory=list)
    occurrence_totals: dict[str, int] = field(default_factory=dict)
    # Content hash (model and text) the embedding was computed for: a mismatch means "recompute".
    embedding_hash: str | None = None

    def __deepcopy__(self, memo: dict[int, Any]) -> Skill:
        """A copy that shares the embedding, which is replaced but never changed in place.

        Deep-copying 384 floats per skill made ``Skillbook.skills()`` of a
        10,000-skill book take seconds; every other field is copied as usual.
        """
        clone = copy.copy(self)
        clone.occurrences = _copy_occurrences(self.occurrences)
        clone.occurrence_totals = dict(self.occurrence_totals)
        return clone

    @property
    def is_active(self) -> bool:
        """False once the skill has been soft-removed."""
        return self.status == "active"

    def to_dict(self) -> dict[str, Any]:
        """The skill as the JSON object of the skillbook file format (a deep copy, as ``asdict``)."""
        cls: type = type(self)
        data = {name: getattr(self, name) for name in _field_order(cls)}
        for name, value in data.items():
            if isinstance(value, list | dict) and name != "occurrences":
                data[name] = copy.deepcopy(value)
        data["occurrences"] = _copy_occurrences(self.occurrences)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Skill:
        """Build a skill from a file's JSON object; unknown keys are ignored, missing ones defaulted.

        Older files (ours and the reference's before 0.13) call the occurrences ``sources``.
        """
        if "occurrences" not in data and "sources" in data:
            data = {**data, "occurrences": data["sources"]}
        return cls(**_known_fields(cls, data))


@dataclass
class SimilarityDecision:
    """What was decided about two similar skills (KEEP means: do not flag this pair again)."""

    decision: str
    reasoning: str = ""
    similarity_at_decision: float | None = None
    decided_at: str = field(default_factory=utc_now)

    def to_dict(self) -> dict[str, Any]:
        """The decision as a JSON object."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SimilarityDecision:
        """Build a decision from JSON; unknown keys are ignored."""
        return cls(**_known_fields(cls, data))
