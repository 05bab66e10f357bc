"""The change log and diffs as plain JSON for people and scripts: the CLI's and the console's views.

A ChangeRecord holds operations and before/after images; these functions say
what a reader wants from them: what a version did (its operations, the skills
it added, removed or changed, who did it) and how a skill differs between two
versions, leaving out the fields that change on every write.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from .changelog import ChangeRecord, SkillImage
from .planning import skill_order_key

__all__ = [
    "UNTOLD_FIELDS",
    "change_actor",
    "change_effect",
    "change_to_json",
    "changed_fields",
    "consolidation_label",
    "describe_changes",
    "operation_counts",
    "skill_changes",
]

# Fields that change on every write and say nothing a reader of a diff wants.
UNTOLD_FIELDS = ("updated_at", "embedding", "embedding_hash")


def changed_fields(before: dict[str, Any], after: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """Field -> (old, new) for each told field that differs between two images of one skill."""
    return {
        key: (before.get(key), after.get(key))
        for key in sorted({*before, *after} - set(UNTOLD_FIELDS))
        if before.get(key) != after.get(key)
    }


def describe_changes(diff: dict[str, tuple[SkillImage, SkillImage]]) -> dict[str, list[Any]]:
    """A store diff as added and removed skills, and changed skills with their changed fields."""
    added, removed, changed = [], [], []
    for skill_id, (before, after) in sorted(diff.items(), key=lambda item: skill_order_key(item[0])):
        if before is None and after is not None:
            added.append(after)
        elif after is None and before is not None:
            removed.append(before)
        elif before is not None and after is not None:
            fields = changed_fields(before, after)
            if fields:
                changed.append({"id": skill_id, "fields": fields})
    return {"added": added, "removed": removed, "changed": changed}


def skill_changes(diff: dict[str, tuple[SkillImage, SkillImage]]) -> list[dict[str, Any]]:
    """A store diff side by side: per skill its id, ``change``, both states and the fields that differ.

    ``change`` is added, removed or changed; a skill whose only differences are
    untold fields (an embedding recomputed) is left out.
    """
    rows = []
    for skill_id, (before, after) in sorted(diff.items(), key=lambda item: skill_order_key(item[0])):
        if before is None and after is None:
            continue
        if before is None or after is None:
            change = "added" if before is None else "removed"
            fields = sorted(set(before or after or {}) - set(UNTOLD_FIELDS))
        else:
            change, fields = "changed", list(changed_fields(before, after))
            if not fields:
                continue
        rows.append({"id": skill_id, "change": change, "before": before, "after": after, "fields": fields})
    return rows


def change_to_json(change: ChangeRecord) -> dict[str, Any]:
    """One change-log entry as plain JSON."""
    return {
        "version": change.version,
        "base_version": change.base_version,
        "kind": change.kind.value,
        "time": change.time,
        "operations": [op.model_dump(exclude_none=True) for op in change.operations],
        "consolidation": change.consolidation,
        "source": change.source,
        "reasoning": change.reasoning,
    }


def consolidation_label(op: dict[str, Any]) -> str:
    """A consolidation operation in one line: ``MERGE keep <- a,b``, ``DELETE a``."""
    ids = op.get("merge_ids") or op.get("skill_ids") or [op.get("skill_id")]
    target = f"{op['keep_id']} <- " if op.get("keep_id") else ""
    return f"{op.get('type')} {target}{','.join(str(i) for i in ids)}"


def operation_counts(change: ChangeRecord) -> dict[str, int]:
    """Operation type -> how many the version's batch (or consolidation) held, e.g. ADD 2, TAG 3."""
    counts = Counter(str(op.type) for op in change.operations)
    counts.update(str(op.get("type", "?")) for op in change.consolidation)
    return dict(sorted(counts.items()))


def change_effect(change: ChangeRecord) -> dict[str, list[str]]:
    """The skill ids a version added, removed (deleted outright) and changed, as its images say.

    Whatever its kind: a rollback or a lifecycle action has no operations, only images.
    """
    effect: dict[str, list[str]] = {"added": [], "removed": [], "changed": []}
    for skill_id in sorted({*change.before, *change.after}, key=skill_order_key):
        before, after = change.before.get(skill_id), change.after.get(skill_id)
        if before == after:
            continue
        key = "added" if before is None else "removed" if after is None else "changed"
        effect[key].append(skill_id)
    return effect


def change_actor(source: dict[str, Any] | None) -> str:
    """Who or what made a version, from its source: the person, the batch sample, or the command."""
    if not source:
        return ""
    review = source.get("review")
    if isinstance(review, dict) and review.get("actor"):
        return str(review["actor"])
    if source.get("actor"):
        return str(source["actor"])
    if source.get("batch") is not None:
        sample = f" sample {source['sample']}" if source.get("sample") is not None else ""
        return f"batch {source['batch']}{sample}"
    if source.get("command"):
        return str(source["command"])
    return ""
