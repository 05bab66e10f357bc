"""The change log of a Redis skillbook: one stream entry per version, with before and after images.

Each entry records the touched skills' state before and after its version
(None for a skill that did not exist), which is all that diff() and
rollback() need: neither ever reads the skills hash as a whole.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any

from ...core.updates import UpdateBatch, UpdateOperation
from .errors import ChangelogTrimmedError
from .replies import decode_text

__all__ = [
    "BIG_IMAGES",
    "CONSOLIDATION_MARK",
    "ChangeKind",
    "ChangeRecord",
    "SkillImage",
    "aggregate_diff",
    "decode_change",
    "decode_change_of_skill",
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


# Bytes of an entry's before and after images above which decode_change_of_skill decodes only the
# skill's part of them (where its key stands) instead of the whole (an import's are tens of MB).
BIG_IMAGES = 1 << 20
_UNSURE = object()  # a big entry's part that could not be read out alone: decode the whole entry
_WINDOW = 64 * 1024  # bytes decoded at first after a skill's key (grown until its value is whole)


def decode_change_of_skill(
    fields: Mapping[Any, Any] | list[Any], skill_id: str, *, big: int = BIG_IMAGES
) -> ChangeRecord | None:
    """decode_change(fields) with before and after cut to ``skill_id``; None when it did not touch it.

    An entry whose images never spell the skill's id is passed over undecoded.
    Of a big entry (images over ``big`` bytes) only the skill's values are
    decoded, from where its key stands in the JSON: the key must occur once and
    its value be the skill (its id) or null, else the whole entry is decoded.
    """
    pairs = zip(fields[::2], fields[1::2], strict=True) if isinstance(fields, list) else fields.items()
    raw = {decode_text(key): value for key, value in pairs}
    images = {side: _as_bytes(raw.get(side) or b"") for side in ("before", "after")}
    spelled = {json.dumps(skill_id).encode(), json.dumps(skill_id, ensure_ascii=False).encode()}
    if not any(name in image for name in spelled for image in images.values()):
        return None
    if sum(len(image) for image in images.values()) > big:
        parts = {side: _part_of(image, skill_id) for side, image in images.items()}
        if _UNSURE not in parts.values() and _consistent(parts["before"], parts["after"]):
            if not parts["before"] and not parts["after"]:
                return None
            empty = {side: "{}" for side in images}
            return replace(decode_change({**raw, **empty}), before=parts["before"], after=parts["after"])
    record = decode_change(fields)
    if skill_id not in record.before and skill_id not in record.after:
        return None
    return replace(record, before=_only(record.before, skill_id), after=_only(record.after, skill_id))


def _as_bytes(value: bytes | str) -> bytes:
    return value if isinstance(value, bytes) else value.encode()


def _only(images: dict[str, SkillImage], skill_id: str) -> dict[str, SkillImage]:
    return {skill_id: images[skill_id]} if skill_id in images else {}


def _part_of(images: bytes, skill_id: str) -> Any:
    """``{skill_id: its image}`` read out of the JSON object ``images`` where its key stands; {} if absent.

    _UNSURE when the key occurs more than once, or its value is neither null nor the skill.
    """
    key = json.dumps(skill_id, ensure_ascii=False).encode() + b":"
    at = images.find(key)
    if at < 0:
        # Spelled only otherwise (as a value, or escaped): not a key, unless written with escapes.
        return {} if json.dumps(skill_id) == json.dumps(skill_id, ensure_ascii=False) else _UNSURE
    start = at + len(key)
    if images.find(key, start) >= 0:
        return _UNSURE
    window = _WINDOW
    while True:
        # A cut multi-byte character can only be at the window's end, after a whole value.
        text = images[start : start + window].decode("utf-8", errors="ignore").lstrip()
        try:
            value, _ = json.JSONDecoder().raw_decode(text)
            break
        except json.JSONDecodeError:
            if start + window >= len(images):
                return _UNSURE
            window *= 4
    if value is None or (isinstance(value, dict) and value.get("id") == skill_id):
        return {skill_id: value}
    return _UNSURE


def _consistent(before: dict[str, SkillImage], after: dict[str, SkillImage]) -> bool:
    """True when the parts read out agree: the skill as an image on at least one side, or on neither."""
    if not before and not after:
        return True
    return any(image is not None for image in (*before.values(), *after.values()))


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
