"""A change-log entry in brief: what a timeline and a growth curve need of it, bounded whatever its size.

An import of 100,000 skills is one entry holding 100,000 before and after
images; a reader listing versions needs only its operation counts, the first
few skills it added, removed or changed (and how many more), and how much it
grew the skillbook. A ChangeDigest holds just that, so it can be kept per
version (entries never change once written) instead of decoding the entry
again on every page.

An entry touching STORED_DIGEST_CHANGES skills or more (an import, a big rollback
or consolidation) gets its digest stored beside it by its writer, in the same
transaction (keys.change_digests): decoding such an entry takes seconds, so a
console that has just started would otherwise pay them on its first timeline.
A stored digest is read back as untrusted input (stored_digest_from_json).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from .change_summary import change_effect, operation_counts
from .changelog import ChangeKind, ChangeRecord, SkillImage, decode_change
from .planning import active_growth, is_active

__all__ = [
    "DIGEST_SHOWN",
    "STORED_DIGEST_CHANGES",
    "ChangeDigest",
    "content_chars",
    "digest_change",
    "growth_of",
    "stored_digest_from_json",
    "stored_digest_json",
]

# Skills per kind of effect (added, removed, changed), and operations, a digest lists; the rest it counts.
DIGEST_SHOWN = 100
_EFFECTS = ("added", "removed", "changed")
# Skills an entry touches from which its writer stores its digest: digesting 500 images takes some
# milliseconds, 100,000 some seconds; a learning step's entry touches a few and is never stored.
STORED_DIGEST_CHANGES = 500


@dataclass(frozen=True)
class ChangeDigest:
    """One version as the change log recorded it, its lists cut to DIGEST_SHOWN items (the rest counted)."""

    version: int
    base_version: int | None
    kind: ChangeKind
    time: str
    source: dict[str, Any] | None
    reasoning: str
    counts: dict[str, int]  # operation type -> how many (operation_counts)
    operations: list[dict[str, Any]]  # the first operations, as JSON
    operations_total: int
    consolidation: list[dict[str, Any]]  # the first consolidation operations
    consolidation_total: int
    effect: dict[str, list[str]]  # the first skill ids added, removed, changed (change_effect's order)
    effect_totals: dict[str, int]
    active_growth: int  # active skills the version added, net
    content_growth: int  # characters of active skills' content it added, net
    weight: int = field(default=0, compare=False)  # roughly the bytes it holds, for a cache's budget

    def to_json(self) -> dict[str, Any]:
        """As change_to_json() gives the entry (lists cut), with how many of each list are not shown."""
        return {
            "version": self.version,
            "base_version": self.base_version,
            "kind": self.kind.value,
            "time": self.time,
            "operations": self.operations,
            "consolidation": self.consolidation,
            "source": self.source,
            "reasoning": self.reasoning,
            "operations_not_shown": self.operations_total - len(self.operations),
            "consolidation_not_shown": self.consolidation_total - len(self.consolidation),
        }

    @property
    def effect_not_shown(self) -> dict[str, int]:
        """Per kind of effect, how many skills ``effect`` leaves out."""
        return {kind: self.effect_totals[kind] - len(self.effect[kind]) for kind in _EFFECTS}


def digest_change(record: ChangeRecord, shown: int = DIGEST_SHOWN) -> ChangeDigest:
    """The digest of a full change record, listing at most ``shown`` items of each list."""
    if shown < 0:
        raise ValueError(f"shown must be at least 0, got {shown}")
    effect = change_effect(record)
    operations = [op.model_dump(exclude_none=True) for op in record.operations[:shown]]
    consolidation = record.consolidation[:shown]
    skills, chars = growth_of(record)
    cut = {kind: ids[:shown] for kind, ids in effect.items()}
    # 1,500: what the objects of a small digest take, measured; then its texts and ids.
    weight = (
        1500
        + len(record.reasoning)
        + len(json.dumps([record.source, operations, consolidation], default=str))
    )
    weight += sum(len(skill_id) + 60 for ids in cut.values() for skill_id in ids)
    return ChangeDigest(
        version=record.version,
        base_version=record.base_version,
        kind=record.kind,
        time=record.time,
        source=record.source,
        reasoning=record.reasoning,
        counts=operation_counts(record),
        operations=operations,
        operations_total=len(record.operations),
        consolidation=consolidation,
        consolidation_total=len(record.consolidation),
        effect=cut,
        effect_totals={kind: len(ids) for kind, ids in effect.items()},
        active_growth=skills,
        content_growth=chars,
        weight=weight,
    )


def growth_of(record: ChangeRecord) -> tuple[int, int]:
    """What one version added: active skills, and characters of active skills' content (both net)."""
    changes = {i: (record.before.get(i), record.after.get(i)) for i in {**record.before, **record.after}}
    text = sum(content_chars(after) - content_chars(before) for before, after in changes.values())
    return active_growth(changes), text


def content_chars(image: SkillImage) -> int:
    """Characters of a skill state's content, counted only while it is active (what a prompt can show)."""
    return len(str(image.get("content") or "")) if image is not None and is_active(image) else 0


def stored_digest_json(
    fields: Mapping[str, str], before: Mapping[str, SkillImage], after: Mapping[str, SkillImage]
) -> str:
    """The digest of the entry a writer adds (its stream ``fields``, images as objects), as stored JSON."""
    # The images are decoded already: only the small fields are decoded again.
    record = decode_change({**fields, "before": "{}", "after": "{}"})
    digest = digest_change(replace(record, before=dict(before), after=dict(after)))
    values = {spec.name: getattr(digest, spec.name) for spec in _STORED}
    return json.dumps({**values, "kind": digest.kind.value}, ensure_ascii=False, default=str)


def stored_digest_from_json(raw: str | bytes, version: int) -> ChangeDigest:
    """A stored digest of ``version`` read back; ValueError naming what is wrong (Redis is untrusted)."""
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ValueError(f"a JSON {type(data).__name__}, not an object")
    missing = sorted(spec.name for spec in _STORED if spec.name not in data)
    if missing:
        raise ValueError(f"no {', '.join(missing)}")
    for name, check in _CHECKS.items():
        if not check(data[name]):
            raise ValueError(f"{name} is {json.dumps(data[name], default=str)[:80]}, not what a digest holds")
    if data["version"] != version:
        raise ValueError(f"stored for version {version} but says version {data['version']}")
    try:
        kind = ChangeKind(data["kind"])
    except ValueError:
        raise ValueError(f"kind {data['kind']!r} is no kind of change") from None
    values = {spec.name: data[spec.name] for spec in _STORED}
    weight = 1500 + len(raw)  # as digest_change counts: the objects, then the texts (here: the JSON)
    return ChangeDigest(**{**values, "kind": kind, "weight": weight})


_STORED = [spec for spec in fields(ChangeDigest) if spec.name != "weight"]


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _dicts(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, dict) for item in value)


def _per_effect(value: Any, check: Any) -> bool:
    return isinstance(value, dict) and set(value) == set(_EFFECTS) and all(check(v) for v in value.values())


_CHECKS: dict[str, Any] = {
    "version": _is_int,
    "base_version": lambda v: v is None or _is_int(v),
    "kind": lambda v: isinstance(v, str),
    "time": lambda v: isinstance(v, str),
    "source": lambda v: v is None or isinstance(v, dict),
    "reasoning": lambda v: isinstance(v, str),
    "counts": lambda v: isinstance(v, dict) and all(_is_int(n) for n in v.values()),
    "operations": _dicts,
    "operations_total": _is_int,
    "consolidation": _dicts,
    "consolidation_total": _is_int,
    "effect": lambda v: _per_effect(
        v, lambda ids: isinstance(ids, list) and all(isinstance(i, str) for i in ids)
    ),
    "effect_totals": lambda v: _per_effect(v, _is_int),
    "active_growth": _is_int,
    "content_growth": _is_int,
}
