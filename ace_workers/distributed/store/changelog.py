"""The change log of a Redis skillbook: one stream entry per version, with before and after images.

Each entry records the touched skills' state before and after its version
(None for a skill that did not exist), which is all that diff() and
rollback() need: neither ever reads the skills hash as a whole.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from ...core.updates import UpdateBatch, UpdateOperation
from .errors import ChangelogTrimmedError
from .replies import decode_text

__all__ = [
    "CONSOLIDATION_MARK",
    "ChangeKind",
    "ChangeRecord",
    "SkillImage",
    "aggregate_diff",
    "decode_change",
    "encode_change",
    "images_at_start",
    "require_contiguous",
    "stream_id",
]

SkillImage = dict[str, Any] | None  # a skill's file-format dict, or None when it does not exist


class ChangeKind(str, Enum):
    """What produced a version."""

    APPLY = "apply"
    ROLLBACK = "rollback"
    IMPORT = "import"
    DECISION = "decision"
    CONSOLIDATE = "consolidate"
    # A review decision (review.py): an approved proposal's changes, a rejection, a policy set.
    REVIEW = "review"
    LIFECYCLE = "lifecycle"  # pin, unpin, archive, restore, prune: the action is in the source


@dataclass(frozen=True)
class ChangeRecord:
    """One version of a skillbook as the change log recorded it."""

    version: int
    base_version: int | None
    time: str
    operations: list[UpdateOperation]
    source: dict[str, Any] | None
    idempotency_key: str | None
    kind: ChangeKind = ChangeKind.APPLY
    reasoning: str = ""
    before: dict[str, SkillImage] = field(default_factory=dict)
    after: dict[str, SkillImage] = field(default_factory=dict)
    consolidation: list[dict[str, Any]] = field(default_factory=list)  # a CONSOLIDATE version's operations


def stream_id(version: int) -> str:
    """The stream entry id of ``version``: versions only grow, so ids stay increasing."""
    return f"{version}-0"


def encode_change(
    *,
    version: int,
    base_version: int | None,
    kind: ChangeKind,
    time: str,
    batch_json: str,
    before: Mapping[str, SkillImage],
    after: Mapping[str, SkillImage],
    source_json: str,
    idempotency_key: str | None,
) -> dict[str, str]:
    """The stream fields of one change."""
    return {
        "version": str(version),
        "base_version": "" if base_version is None else str(base_version),
        "kind": kind.value,
        "time": time,
        "batch": batch_json,
        "before": json.dumps(before, ensure_ascii=False),
        "after": json.dumps(after, ensure_ascii=False),
        "source": source_json,
        "idempotency_key": idempotency_key or "",
    }


def decode_change(fields: Mapping[Any, Any] | list[Any]) -> ChangeRecord:
    """Build a ChangeRecord from a stream entry's fields (bytes or str)."""
    # A cluster transaction hands XRANGE's fields back as a flat [key, value, ...] list.
    pairs = zip(fields[::2], fields[1::2], strict=True) if isinstance(fields, list) else fields.items()
    raw = {decode_text(key): decode_text(value) for key, value in pairs}
    kind = ChangeKind(raw.get("kind", ChangeKind.APPLY.value))
    consolidation: list[dict[str, Any]] = []
    if kind is ChangeKind.CONSOLIDATE or (kind is ChangeKind.REVIEW and is_consolidation_json(raw)):
        # Merge/delete/keep/update operations: kept as JSON; their effect is in before/after.
        data = json.loads(raw.get("batch") or "{}")
        batch = UpdateBatch(reasoning=data.get("reasoning", ""))
        consolidation = list(data.get("operations", []))
    else:
        batch = UpdateBatch.model_validate_json(raw["batch"]) if raw.get("batch") else UpdateBatch()
    base = raw.get("base_version", "")
    return ChangeRecord(
        version=int(raw["version"]),
        base_version=int(base) if base else None,
        time=raw.get("time", ""),
        operations=list(batch.operations),
        source=json.loads(raw.get("source") or "null"),
        idempotency_key=raw.get("idempotency_key") or None,
        kind=kind,
        reasoning=batch.reasoning,
        consolidation=consolidation,
        before=json.loads(raw.get("before") or "{}"),
        after=json.loads(raw.get("after") or "{}"),
    )


# Marks the batch of a REVIEW entry that approved a consolidation (its operations are not an UpdateBatch's).
CONSOLIDATION_MARK = "consolidation"


def is_consolidation_json(raw: Mapping[str, str]) -> bool:
    """True when a REVIEW entry's batch holds consolidation operations (it carries CONSOLIDATION_MARK)."""
    data = json.loads(raw.get("batch") or "{}")
    return isinstance(data, dict) and data.get(CONSOLIDATION_MARK) is True


def require_contiguous(name: str, records: list[ChangeRecord], first: int, last: int) -> None:
    """Raise ChangelogTrimmedError unless ``records`` hold exactly versions ``first``..``last``, in order."""
    found = [record.version for record in records]
    if found == list(range(first, last + 1)):
        return
    raise ChangelogTrimmedError(name, first, last, found[0] if found else None)


def aggregate_diff(records: Iterable[ChangeRecord]) -> dict[str, tuple[SkillImage, SkillImage]]:
    """Skill id -> (state before the first record, state after the last), oldest record first.

    Skills that ended where they started (the same dict) are left out.
    """
    spans: dict[str, tuple[SkillImage, SkillImage]] = {}
    for record in records:
        for skill_id in {**record.before, **record.after}:
            start = spans[skill_id][0] if skill_id in spans else record.before.get(skill_id)
            spans[skill_id] = (start, record.after.get(skill_id))
    return {skill_id: span for skill_id, span in spans.items() if span[0] != span[1]}


def images_at_start(records: Iterable[ChangeRecord]) -> dict[str, SkillImage]:
    """Skill id -> its state before the oldest of ``records`` that touched it.

    Walks the records newest first, each before-image overwriting the last:
    what remains is every touched skill as it was before the whole span.
    """
    images: dict[str, SkillImage] = {}
    for record in sorted(records, key=lambda r: r.version, reverse=True):
        for skill_id in {**record.before, **record.after}:
            images[skill_id] = record.before.get(skill_id)
    return images
