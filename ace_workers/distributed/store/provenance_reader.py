"""Why a skill exists: its state, its occurrences with their evidence, and the changes that touched it.

:func:`skill_history` reads one skill of a Redis skillbook (its image and its
provenance), scans the newest ``scan`` change-log entries for the versions
that touched it, and, for each kept occurrence from a fleet batch, reads the
sample's input from the batch ledger (``BatchStore.item``: epoch 1's payloads,
the same inputs every epoch) while the batch's records live. Nothing here
writes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ...core.reference_format import clean_provenance
from ...core.skill import Skill
from ...errors import UnknownSkillError
from .batches import BatchStore
from .changelog import ChangeRecord
from .errors import BatchInputMissingError, UnknownSkillbookError
from .keys import claim_digest
from .planning import split_provenance
from .provenance_scan import DEFAULT_SCAN, EXPIRED, FOUND, NO_BATCH
from .store import RedisSkillbookStore

__all__ = ["DEFAULT_SCAN", "Evidence", "SkillHistory", "skill_history"]


@dataclass
class Evidence:
    """One occurrence and what its sample was, when the batch ledger still holds it."""

    occurrence: dict[str, Any]
    status: str  # FOUND, EXPIRED or NO_BATCH
    trace: Any = None
    sample: Any = None

    def to_dict(self) -> dict[str, Any]:
        """The occurrence with its evidence under ``"evidence"``."""
        evidence: dict[str, Any] = {"status": self.status}
        if self.status == FOUND:
            evidence.update({"trace": self.trace, "sample": self.sample})
        return {**self.occurrence, "evidence": evidence}


@dataclass
class SkillHistory:
    """A skill's history: current state, provenance with evidence, and the changes that touched it."""

    skillbook: str
    version: int
    skill_id: str
    skill: dict[str, Any] | None  # its file-format dict without provenance; None once removed
    totals: dict[str, int]
    occurrences: list[Evidence]
    changes: list[ChangeRecord]  # newest first, each with this skill's before and after images alone
    scanned: int  # change-log entries looked at

    @property
    def state(self) -> str:
        """active, invalid (soft-deleted, e.g. merged away) or removed."""
        if self.skill is None:
            return "removed"
        return str(self.skill.get("status", "active"))

    def to_dict(self) -> dict[str, Any]:
        """The history as JSON (``skillbook why --json``)."""
        return {
            "skillbook": self.skillbook,
            "version": self.version,
            "skill_id": self.skill_id,
            "state": self.state,
            "skill": self.skill,
            "occurrence_totals": self.totals,
            "total": sum(self.totals.values()),
            "occurrences": [evidence.to_dict() for evidence in self.occurrences],
            "changes": [_change_to_dict(change, self.skill_id) for change in self.changes],
            "changes_scanned": self.scanned,
        }


def skill_history(
    store: RedisSkillbookStore,
    skill_id: str,
    *,
    batches: BatchStore | None = None,
    scan: int = DEFAULT_SCAN,
) -> SkillHistory:
    """The history of ``skill_id`` in ``store``'s skillbook; with ``batches``, each occurrence's sample.

    Raises:
        UnknownSkillbookError: the skillbook was never written.
        UnknownSkillError: no such skill now, nor in the ``scan`` newest changes.
        ValueError: ``scan`` is not a positive int.
    """
    if isinstance(scan, bool) or not isinstance(scan, int) or scan < 1:
        raise ValueError(f"scan must be a positive int, got {scan!r}")
    version, whole = store.read_skill(skill_id)
    if version == 0:
        raise UnknownSkillbookError(store.name)
    changes = store.changes_touching(skill_id, limit=scan)  # each with this skill's images alone
    if whole is None and not changes:
        raise UnknownSkillError(skill_id)
    image: dict[str, Any] | None = None
    totals: dict[str, int] = {}
    occurrences: list[dict[str, Any]] = []
    if whole is not None:
        # Read through the core, as every reader of a skill: an older store's "sources" count too.
        skill = Skill.from_dict(clean_provenance(whole, skill_id, f"skillbook {store.name!r}"))
        image, _ = split_provenance(_without_embedding(skill.to_dict()) or {})
        totals, occurrences = skill.occurrence_totals, skill.occurrences
    return SkillHistory(
        skillbook=store.name,
        version=version,
        skill_id=skill_id,
        skill=image,
        totals=totals,
        occurrences=[_evidence(occurrence, batches, store) for occurrence in occurrences],
        changes=changes,
        scanned=min(scan, version),
    )


def _evidence(occurrence: dict[str, Any], batches: BatchStore | None, store: RedisSkillbookStore) -> Evidence:
    batch_id, index = occurrence.get("batch_id"), occurrence.get("sample_index")
    if not isinstance(batch_id, str) or not isinstance(index, int) or isinstance(index, bool):
        return Evidence(occurrence, NO_BATCH)
    if batches is None or not batches.exists(batch_id):
        return Evidence(occurrence, EXPIRED)
    try:
        item = batches.item(batch_id, index)
    except BatchInputMissingError:
        return Evidence(occurrence, EXPIRED)
    trace, trace_found = _unclaimed(item.get("trace"), batches, store.keys.prefix)
    sample, sample_found = _unclaimed(item.get("sample"), batches, store.keys.prefix)
    if not (trace_found and sample_found):
        return Evidence(occurrence, EXPIRED)
    return Evidence(occurrence, FOUND, trace=trace, sample=sample)


def _unclaimed(value: Any, batches: BatchStore, prefix: str) -> tuple[Any, bool]:
    """A payload field as it was sent: a claim-check reference read back (False once it expired)."""
    if not (isinstance(value, dict) and set(value) == {"claim", "bytes"} and isinstance(value["claim"], str)):
        return value, True
    key = value["claim"]
    if claim_digest(prefix, key) is None:  # only ever a claim key: a ledger entry names what is read
        return None, False
    raw = batches.redis.get(key)
    if raw is None:
        return None, False
    return json.loads(raw), True


def _operations_on(change: ChangeRecord, skill_id: str) -> list[dict[str, Any]]:
    """The operations of ``change`` that touched the skill: those naming it, or the ADD that made it."""
    named = [op for op in change.operations if op.skill_id == skill_id and op.type != "ADD"]
    made = change.before.get(skill_id) is None and change.after.get(skill_id) is not None
    adds = (
        [op for op in change.operations if op.type == "ADD" and op.skill_id in (skill_id, None)]
        if made
        else []
    )
    content = str((change.after.get(skill_id) or {}).get("content", ""))
    # A batch may add several skills: the one whose text this skill got (all, if it was rewritten since).
    adds = [op for op in adds if op.content.strip() == content] or adds
    return [op.model_dump(mode="json") for op in [*adds, *named]]


def _change_to_dict(change: ChangeRecord, skill_id: str) -> dict[str, Any]:
    """One change as JSON: version, kind, time, source, its operations on the skill, before and after."""
    operations = _operations_on(change, skill_id)
    consolidation = [op for op in change.consolidation if skill_id in json.dumps(op)]
    return {
        "version": change.version,
        "kind": change.kind.value,
        "time": change.time,
        "source": change.source,
        "operations": operations,
        "consolidation": consolidation,
        "before": _without_embedding(change.before.get(skill_id)),
        "after": _without_embedding(change.after.get(skill_id)),
    }


def _without_embedding(image: dict[str, Any] | None) -> dict[str, Any] | None:
    if image is None:
        return None
    return {key: value for key, value in image.items() if key != "embedding"}
