"""Delta operations on a skillbook, and the batch a SkillManager produces."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, Field, ValidationError, field_validator

from ..errors import InvalidUpdateError, JsonNestingError
from .json_nesting import loads_bounded
from .skill import OPERATION_TYPES, TAGS
from .skill_limits import MAX_CONTENT_CHARS

__all__ = ["OPERATION_TYPES", "UpdateBatch", "UpdateOperation"]


class UpdateOperation(BaseModel):
    """One change to the skillbook.

    ADD needs ``section`` and ``content``; UPDATE needs ``skill_id`` and
    ``content``; TAG needs ``skill_id`` and ``metadata`` counts such as
    ``{"helpful": 1}``; REMOVE needs ``skill_id``.
    """

    type: str = Field(description="One of ADD, UPDATE, TAG, REMOVE.")
    section: str = Field(default="", description="Section of the skill (required for ADD).")
    content: str = Field(
        default="",
        description=f"Strategy text (required for ADD and UPDATE), at most {MAX_CONTENT_CHARS} characters; "
        "a longer one is not applied.",
    )
    skill_id: str | None = Field(
        default=None, description="Id of an existing skill (required for UPDATE, TAG and REMOVE)."
    )
    metadata: dict[str, Any] = Field(
        default_factory=dict, description='For TAG: counts to add, e.g. {"helpful": 1}.'
    )
    justification: str = Field(default="", description="Why this change helps.")
    evidence: str = Field(default="", description="What in the trace supports it.")
    insight_source: dict[str, Any] | None = Field(
        default=None, description="Provenance filled in by the pipeline (sample, epoch); leave empty."
    )

    @field_validator("type", mode="before")
    @classmethod
    def _normalise_type(cls, value: Any) -> Any:
        return value.strip().upper() if isinstance(value, str) else value

    def problem(self) -> str | None:
        """Why this operation cannot be applied, or None if it is well formed."""
        check = _CHECKS.get(self.type)
        if check is None:
            return f"type {self.type!r} is not one of {', '.join(OPERATION_TYPES)}"
        return check(self)


def _check_add(op: UpdateOperation) -> str | None:
    if not op.section.strip():
        return "ADD needs a non-empty section"
    if not op.content.strip():
        return "ADD needs non-empty content"
    return None


def _check_update(op: UpdateOperation) -> str | None:
    if not op.skill_id:
        return "UPDATE needs a skill_id"
    if not op.content.strip():
        return "UPDATE needs non-empty content"
    return None


def _check_tag(op: UpdateOperation) -> str | None:
    if not op.skill_id:
        return "TAG needs a skill_id"
    if not op.metadata:
        return f"TAG needs metadata counts for one of {', '.join(TAGS)}"
    for key, value in op.metadata.items():
        if key not in TAGS:
            return f"TAG metadata key {key!r} is not one of {', '.join(TAGS)}"
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            return f"TAG count for {key!r} must be a non-negative int, got {value!r}"
    return None


def _check_remove(op: UpdateOperation) -> str | None:
    return None if op.skill_id else "REMOVE needs a skill_id"


_CHECKS = {"ADD": _check_add, "UPDATE": _check_update, "TAG": _check_tag, "REMOVE": _check_remove}


class UpdateBatch(BaseModel):
    """The operations a SkillManager decided on, with its reasoning; applied all or nothing."""

    reasoning: str = Field(default="", description="Why these operations, in one or two sentences.")
    operations: list[UpdateOperation] = Field(default_factory=list)

    def validate_operations(self) -> None:
        """Raise InvalidUpdateError naming the first malformed operation."""
        for index, op in enumerate(self.operations):
            reason = op.problem()
            if reason is not None:
                raise InvalidUpdateError(index, op.type, reason)

    def to_json(self) -> str:
        """The batch as a JSON string."""
        return self.model_dump_json()

    @classmethod
    def from_json(cls, data: str | bytes | dict[str, Any]) -> UpdateBatch:
        """Parse and validate a batch; raise InvalidUpdateError naming the bad operation."""
        try:
            raw = loads_bounded(data) if isinstance(data, (str, bytes)) else data
        except (json.JSONDecodeError, UnicodeDecodeError, JsonNestingError) as exc:
            raise InvalidUpdateError(-1, "", f"the batch is not valid JSON ({exc})") from exc
        try:
            batch = cls.model_validate(raw)
        except ValidationError as exc:
            first = exc.errors()[0]
            location = ".".join(str(part) for part in first["loc"])
            index = next((p for p in first["loc"] if isinstance(p, int)), -1)
            raise InvalidUpdateError(index, "", f"{location}: {first['msg']}") from exc
        batch.validate_operations()
        return batch
