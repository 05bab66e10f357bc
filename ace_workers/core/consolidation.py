"""Consolidation operations on near-duplicate skills, and how a skillbook applies them.

A deduplication run turns similar pairs into a :class:`ConsolidationBatch` of
:class:`MergeOp`, :class:`DeleteOp`, :class:`KeepOp` and :class:`UpdateOp`.
The batch is plain JSON (``to_dict``/``from_dict``) so it can travel in a
queue message. :meth:`Skillbook.apply_consolidation
<ace_workers.core.skillbook.Skillbook.apply_consolidation>` checks the whole
batch against the skills it names, then applies all of it or none of it.

The functions here touch only the skills a batch names and the similarity
decisions of the pairs it names, so a store can run them on a small
skillbook holding just those skills.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, ValidationError, model_validator

from ..counts import counted
from ..errors import InvalidConsolidationError, InvalidUpdateError, JsonNestingError
from .json_nesting import loads_bounded
from .skill import TAGS, SimilarityDecision, Skill, utc_now
from .skill_limits import MAX_CONTENT_CHARS
from .skill_provenance import DEFAULT_KEEP, merge_occurrences, occurrence_of, record_occurrence

__all__ = [
    "CONSOLIDATION_TYPES",
    "ConsolidationBatch",
    "ConsolidationOp",
    "ConsolidationReport",
    "DeleteOp",
    "KeepOp",
    "MergeOp",
    "UpdateOp",
    "apply_consolidation_operations",
    "check_consolidation",
]

CONSOLIDATION_TYPES = ("MERGE", "DELETE", "KEEP", "UPDATE")


class _Op(BaseModel):
    def named_ids(self) -> list[str]:
        """Every skill id the operation names, in order."""
        raise NotImplementedError

    def to_dict(self) -> dict[str, Any]:
        """The operation as a JSON object."""
        return self.model_dump(mode="json")


class MergeOp(_Op):
    """Fold ``merge_ids`` into ``keep_id``: their votes add to its counters, they are soft-deleted.

    ``merged_content`` replaces the kept skill's text (empty keeps it as it
    is); the merged skills' occurrences and totals join the kept one's (bounded).
    """

    type: Literal["MERGE"] = "MERGE"
    keep_id: str = Field(description="Id of the skill that survives; prefer the older one.")
    merge_ids: list[str] = Field(min_length=1, description="Ids folded into keep_id and soft-deleted.")
    merged_content: str = Field(
        default="",
        max_length=MAX_CONTENT_CHARS,
        description="One sentence stating what all merged skills said; empty keeps keep_id's.",
    )
    reasoning: str = Field(default="", description="Why these skills say the same thing.")

    def named_ids(self) -> list[str]:
        """The kept id, then the merged ones."""
        return [self.keep_id, *self.merge_ids]


class DeleteOp(_Op):
    """Soft-delete a redundant or harmful skill (its status becomes "invalid")."""

    type: Literal["DELETE"] = "DELETE"
    skill_id: str = Field(description="Id of the skill to remove.")
    reasoning: str = Field(default="", description="Why the skill should go.")

    def named_ids(self) -> list[str]:
        """The deleted id."""
        return [self.skill_id]


class KeepOp(_Op):
    """Record that two similar skills are distinct, so the pair is not flagged again."""

    type: Literal["KEEP"] = "KEEP"
    skill_ids: list[str] = Field(min_length=2, max_length=2, description="The two ids of the pair.")
    similarity: float | None = Field(default=None, description="Their similarity when judged.")
    reasoning: str = Field(default="", description="What tells the two skills apart.")

    def named_ids(self) -> list[str]:
        """The two ids of the pair."""
        return list(self.skill_ids)


class UpdateOp(_Op):
    """Rewrite one skill of a pair so it says clearly what sets it apart; its embedding is cleared."""

    type: Literal["UPDATE"] = "UPDATE"
    skill_id: str = Field(description="Id of the skill to rewrite.")
    new_content: str = Field(
        min_length=1, max_length=MAX_CONTENT_CHARS, description="The differentiated text."
    )
    reasoning: str = Field(default="", description="What the rewrite makes distinct.")

    def named_ids(self) -> list[str]:
        """The rewritten id."""
        return [self.skill_id]


ConsolidationOp = Annotated[MergeOp | DeleteOp | KeepOp | UpdateOp, Field(discriminator="type")]


def _upper_types(value: Any) -> Any:
    # LLMs write "merge" as often as "MERGE".
    if isinstance(value, list):
        return [
            {**item, "type": item["type"].strip().upper()}
            if isinstance(item, dict) and isinstance(item.get("type"), str)
            else item
            for item in value
        ]
    return value


class ConsolidationBatch(BaseModel):
    """Consolidation operations applied together, all or none."""

    reasoning: str = Field(default="", description="Why these operations, in a sentence or two.")
    operations: list[ConsolidationOp] = Field(default_factory=list)
    # The text of each named skill when the batch was planned: a skill rewritten since is
    # refused at apply time (the plan judged the old text), and the batch is planned again.
    planned_contents: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _normalise_types(cls, data: Any) -> Any:
        if isinstance(data, dict) and "operations" in data:
            return {**data, "operations": _upper_types(data["operations"])}
        return data

    def named_ids(self) -> set[str]:
        """Every skill id the batch names: the skills a store must read to apply it."""
        return {skill_id for op in self.operations for skill_id in op.named_ids()}

    def to_dict(self) -> dict[str, Any]:
        """The batch as a JSON object."""
        data: dict[str, Any] = {
            "reasoning": self.reasoning,
            "operations": [op.to_dict() for op in self.operations],
        }
        if self.planned_contents:
            data["planned_contents"] = self.planned_contents
        return data

    def to_json(self) -> str:
        """The batch as a JSON string."""
        return json.dumps(self.to_dict(), ensure_ascii=False)

    @classmethod
    def from_dict(cls, data: str | bytes | Mapping[str, Any]) -> ConsolidationBatch:
        """Parse a batch from JSON text or an object; InvalidUpdateError names the bad operation."""
        try:
            raw = loads_bounded(data) if isinstance(data, str | bytes) else dict(data)
        except (json.JSONDecodeError, UnicodeDecodeError, JsonNestingError) as exc:
            raise InvalidUpdateError(-1, "", f"the batch is not valid JSON ({exc})") from exc
        try:
            return cls.model_validate(raw)
        except ValidationError as exc:
            first = exc.errors()[0]
            location = ".".join(str(part) for part in first["loc"])
            index = next((p for p in first["loc"] if isinstance(p, int)), -1)
            raise InvalidUpdateError(index, "", f"{location}: {first['msg']}") from exc

    from_json = from_dict


@dataclass
class ConsolidationReport:
    """What one consolidation changed; ``merged`` maps each kept id to the ids folded into it."""

    merged: dict[str, list[str]] = field(default_factory=dict)
    deleted: list[str] = field(default_factory=list)
    kept: list[tuple[str, str]] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        """True if anything was applied."""
        return bool(self.merged or self.deleted or self.kept or self.updated)

    @property
    def removed(self) -> list[str]:
        """Ids soft-deleted by merges and deletes."""
        return [*(i for ids in self.merged.values() for i in ids), *self.deleted]

    def summary(self) -> str:
        """One line for logs."""
        return (
            f"{sum(len(ids) for ids in self.merged.values())} merged into {len(self.merged)}, "
            f"{len(self.deleted)} deleted, {counted(len(self.kept), 'pair')} kept, "
            f"{len(self.updated)} updated"
        )

    def to_dict(self) -> dict[str, Any]:
        """The report as a JSON object."""
        return {
            "merged": self.merged,
            "deleted": self.deleted,
            "kept": [list(pair) for pair in self.kept],
            "updated": self.updated,
        }


# -- checking -----------------------------------------------------------------------------
def _check_named(index: int, op: _Op, skills: Mapping[str, Skill], gone: set[str]) -> None:
    op_type = str(getattr(op, "type", ""))
    ids = op.named_ids()
    for skill_id in ids:
        skill = skills.get(skill_id)
        if skill is None:
            raise InvalidConsolidationError(index, op_type, skill_id, f"no skill with id {skill_id!r}")
        if skill.is_archived:
            raise InvalidConsolidationError(index, op_type, skill_id, f"skill {skill_id!r} is archived")
        if not skill.is_active or skill_id in gone:
            raise InvalidConsolidationError(
                index, op_type, skill_id, f"skill {skill_id!r} is already deleted"
            )
        # A second line of defence: the detector never pairs a pinned skill (dedup/detector.py).
        if skill.pinned and not isinstance(op, KeepOp):
            raise InvalidConsolidationError(
                index,
                op_type,
                skill_id,
                f"skill {skill_id!r} is pinned: deduplication never merges, deletes or rewrites it",
            )
    if len(set(ids)) != len(ids):
        duplicate = next(i for i in ids if ids.count(i) > 1)
        raise InvalidConsolidationError(index, op_type, duplicate, f"names {duplicate!r} twice")


def check_consolidation(
    operations: Iterable[_Op], skills: Mapping[str, Skill], planned_contents: Mapping[str, str] | None = None
) -> None:
    """Raise InvalidConsolidationError for the first operation naming an unknown, deleted or pinned skill.

    Operations are checked in order against the state the earlier ones leave,
    so a batch that merges a skill away and then names it is rejected too.
    With ``planned_contents`` (a batch's), a named skill whose text changed
    since the plan is rejected as well: the plan judged the old text.
    """
    gone: set[str] = set()
    planned = planned_contents or {}
    for index, op in enumerate(operations):
        _check_named(index, op, skills, gone)
        for skill_id in op.named_ids():
            if skill_id in planned and skills[skill_id].content != planned[skill_id]:
                raise InvalidConsolidationError(
                    index,
                    str(getattr(op, "type", "")),
                    skill_id,
                    f"skill {skill_id!r} was rewritten after the plan was made",
                )
        if isinstance(op, MergeOp):
            gone.update(op.merge_ids)
        elif isinstance(op, DeleteOp):
            gone.add(op.skill_id)


# -- applying -----------------------------------------------------------------------------
DecisionSink = Callable[[str, str, SimilarityDecision], None]
# The actor of every consolidation occurrence: store/actors.py's DEDUP (the core cannot import it).
DEDUP_ACTOR = "dedup"


def _dedup_occurrence(operation_type: str, reasoning: str, **extra: Any) -> dict[str, Any]:
    return occurrence_of(operation_type, {"actor": DEDUP_ACTOR, "reasoning": reasoning, **extra})


def _set_content(skill: Skill, content: str) -> None:
    skill.content = content
    skill.embedding = None  # it describes the old text
    skill.embedding_hash = None


def _soft_delete(skill: Skill) -> None:
    skill.status = "invalid"
    skill.updated_at = utc_now()


def _apply_merge(op: MergeOp, skills: Mapping[str, Skill], report: ConsolidationReport, bound: int) -> None:
    keep = skills[op.keep_id]
    merged_skills = [skills[merged_id] for merged_id in op.merge_ids]
    occurrence = _dedup_occurrence("MERGE", op.reasoning, merged_from=list(op.merge_ids))
    merge_occurrences(keep, merged_skills, occurrence, bound)
    for merged in merged_skills:
        for tag in TAGS:
            setattr(keep, tag, getattr(keep, tag) + getattr(merged, tag))
        record_occurrence(merged, _dedup_occurrence("REMOVE", op.reasoning, merged_into=op.keep_id), bound)
        _soft_delete(merged)
    content = op.merged_content.strip()
    if content and content != keep.content:
        _set_content(keep, content)
    keep.updated_at = utc_now()
    report.merged.setdefault(op.keep_id, []).extend(op.merge_ids)


def _apply_delete(op: DeleteOp, skills: Mapping[str, Skill], report: ConsolidationReport, bound: int) -> None:
    record_occurrence(skills[op.skill_id], _dedup_occurrence("REMOVE", op.reasoning), bound)
    _soft_delete(skills[op.skill_id])
    report.deleted.append(op.skill_id)


def _apply_update(op: UpdateOp, skills: Mapping[str, Skill], report: ConsolidationReport, bound: int) -> None:
    skill = skills[op.skill_id]
    record_occurrence(skill, _dedup_occurrence("UPDATE", op.reasoning), bound)
    _set_content(skill, op.new_content.strip())
    skill.updated_at = utc_now()
    report.updated.append(op.skill_id)


def apply_consolidation_operations(
    operations: Iterable[_Op],
    skills: Mapping[str, Skill],
    record_decision: DecisionSink,
    *,
    keep: int = DEFAULT_KEEP,
) -> ConsolidationReport:
    """Apply already-checked operations to ``skills`` in place; KEEP decisions go to ``record_decision``.

    Call :func:`check_consolidation` first: this function assumes every id it
    is given exists and is active. Each changed skill records an occurrence
    (actor ``dedup``), keeping ``keep`` of them.
    """
    report = ConsolidationReport()
    for op in operations:
        if isinstance(op, KeepOp):
            id_a, id_b = op.named_ids()
            decision = SimilarityDecision("KEEP", op.reasoning, op.similarity)
            record_decision(id_a, id_b, decision)
            report.kept.append((id_a, id_b))
        else:
            _APPLY[type(op)](op, skills, report, keep)
    return report


_APPLY: dict[type[_Op], Callable[[Any, Mapping[str, Skill], ConsolidationReport, int], None]] = {
    MergeOp: _apply_merge,
    DeleteOp: _apply_delete,
    UpdateOp: _apply_update,
}
