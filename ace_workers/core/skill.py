"""One learned strategy, and a recorded decision about a pair of similar skills."""

from __future__ import annotations

import copy
import functools
from dataclasses import asdict, dataclass, field, fields
from datetime import UTC, datetime
from typing import Any, Literal

__all__ = ["OPERATION_TYPES", "SKILL_STATUSES", "SimilarityDecision", "Skill", "normalise_content", "utc_now"]

# "invalid": soft-removed (by a REMOVE or a merge); "archived": set aside by hand or by pruning,
# kept and restorable (core/lifecycle_rules.py). Only "active" skills are shown in prompts and counted.
SkillStatus = Literal["active", "invalid", "archived"]
SKILL_STATUSES = ("active", "invalid", "archived")
TAGS = ("helpful", "harmful", "neutral")
# The delta operations on skills (core/updates.py); here, apart from pydantic, for --help texts.
OPERATION_TYPES = ("ADD", "UPDATE", "TAG", "REMOVE")


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


# Fields to_dict leaves out when unset (False, None, empty): the lifecycle's, and provenance,
# which the Redis store keeps beside the skill, so an image rebuilt from a Skill stays the same.
_OMITTED_WHEN_UNSET = ("pinned", "archive_info", "occurrences", "occurrence_totals")


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
    # Provenance (core/skill_provenance.py): the last K occurrences, oldest first, and totals by operation.
    occurrences: list[dict[str, Any]] = field(default_factory=list)
    occurrence_totals: dict[str, int] = field(default_factory=dict)
    # Content hash (model and text) the embedding was computed for: a mismatch means "recompute".
    embedding_hash: str | None = None
    # Pinned by a person: never removed, merged or archived by the SkillManager, dedup or pruning.
    pinned: bool = False
    # While archived: when, by whom and why ({"at", "by", "reason"}); None otherwise.
    archive_info: dict[str, str] | None = None

    def __deepcopy__(self, memo: dict[int, Any]) -> Skill:
        """A copy that shares the embedding, which is replaced but never changed in place.

        Deep-copying 384 floats per skill made ``Skillbook.skills()`` of a
        10,000-skill book take seconds; every other field is copied as usual.
        """
        clone = copy.copy(self)
        clone.occurrences = _copy_occurrences(self.occurrences)
        clone.occurrence_totals = dict(self.occurrence_totals)
        clone.archive_info = dict(self.archive_info) if self.archive_info is not None else None
        return clone

    @property
    def is_active(self) -> bool:
        """False once the skill has been soft-removed or archived."""
        return self.status == "active"

    @property
    def is_archived(self) -> bool:
        """True while the skill is archived: out of the prompt, kept, restorable."""
        return self.status == "archived"

    def to_dict(self) -> dict[str, Any]:
        """The skill as the JSON object of the skillbook file format (a deep copy, as ``asdict``).

        The lifecycle fields appear only when set, so the skills never pinned or
        archived keep the reference format and their stored images do not change.
        """
        cls: type = type(self)
        data = {name: getattr(self, name) for name in _field_order(cls)}
        for name, value in data.items():
            if isinstance(value, list | dict) and name != "occurrences":
                data[name] = copy.deepcopy(value)
        data["occurrences"] = _copy_occurrences(self.occurrences)
        for name in _OMITTED_WHEN_UNSET:
            if not data[name]:
                del data[name]
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


def normalise_content(text: str) -> str:
    """Skill text compared for duplicates: case, spacing and a final full stop do not count."""
    return " ".join(text.lower().split()).rstrip(".")
