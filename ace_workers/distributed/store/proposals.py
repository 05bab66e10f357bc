"""A proposal: learned operations waiting for a reviewer, with their evidence and the skills they saw.

One proposal is the reviewed part of one write (a SkillManager batch, or a dedup
consolidation). It keeps the images of the skills it touches as they were when it
was proposed, so an approval can tell whether one changed since (a conflict).
Stored as JSON in the ``proposals`` hash; pending ids also in ``proposal_queue``.

Writes that propose the same operations (the same signature) while one proposal of
them is open are merged into it: it counts them and keeps where each came from (its
occurrences), so a reviewer decides an idea once, not once per sample that had it.
"""

from __future__ import annotations

import hashlib
import json
from enum import Enum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ...core.consolidation import ConsolidationBatch
from ...core.skill_ids import section_prefix
from ...core.updates import UpdateBatch
from ...errors import one_line
from .changelog import SkillImage
from .errors import CorruptDataError
from .review_names import ProposalStatus
from .review_policy import operation_signature

__all__ = [
    "MAX_OCCURRENCES",
    "Decision",
    "Occurrence",
    "Proposal",
    "ProposalKind",
    "ProposalStatus",
    "consolidation_signature",
    "decode_proposal",
    "proposal_id",
    "signature_digest",
    "substance_changed",
    "update_signature",
]

# The fields that decide what a skill says: a change of counters or timestamps (a TAG, a
# provenance record) is no reason to refuse an approval; a rewrite, a move, a removal is.
_SUBSTANCE = ("section", "content", "status")
# The occurrences a proposal keeps: its first and the newest (its count counts them all).
MAX_OCCURRENCES = 50


class ProposalKind(str, Enum):
    """What a proposal applies."""

    UPDATE = "update"  # UpdateOperations, as SkillbookWrites.apply applies them
    CONSOLIDATE = "consolidate"  # a dedup ConsolidationBatch


class Decision(BaseModel):
    """Who decided a proposal, when, why, and the version its approval made."""

    actor: str
    time: str
    note: str = ""
    version: int | None = None  # the version that recorded the decision; None: it made none (no change)
    despite_conflicts: list[str] = Field(default_factory=list)  # skills changed since, approved anyway
    agreeing: list[str] = Field(default_factory=list)  # auto-approval: the writes that agreed
    no_op: bool = False  # approving it changed no skill: no version was made (version is None)


class Occurrence(BaseModel):
    """One write that proposed a proposal's operations: its key, where it came from, when."""

    key: str  # the write's idempotency key (batch, epoch and sample, step)
    source: dict[str, Any] = Field(default_factory=dict)
    insight_sources: list[dict[str, Any]] = Field(default_factory=list)
    at: str


class Proposal(BaseModel):
    """Operations proposed for a skillbook, their evidence, and the skills as they were proposed on."""

    model_config = ConfigDict(extra="forbid")

    id: str
    skillbook: str
    kind: ProposalKind
    operations: list[dict[str, Any]]
    reasoning: str = ""
    # Where it came from: the write scope's source (batch, epoch, sample, step) and each
    # operation's insight_source (the sample and epoch the Reflector learned it from).
    source: dict[str, Any] = Field(default_factory=dict)
    insight_sources: list[dict[str, Any]] = Field(default_factory=list)
    base_version: int
    base_images: dict[str, SkillImage] = Field(default_factory=dict)
    planned_contents: dict[str, str] = Field(default_factory=dict)  # consolidation: the texts judged
    created_at: str
    idempotency_key: str | None = None
    signature: str = ""  # the operations as auto-approval compares them
    status: ProposalStatus = ProposalStatus.PENDING
    decision: Decision | None = None
    count: int = 1  # how many writes proposed these operations (identical ones merged into this one)
    occurrences: list[Occurrence] = Field(default_factory=list)  # the first and newest MAX_OCCURRENCES

    def occurrence(self) -> Occurrence:
        """This proposal's own write as an occurrence (a draft's, before any merge)."""
        return Occurrence(
            key=self.idempotency_key or self.id,
            source=self.source,
            insight_sources=self.insight_sources,
            at=self.created_at,
        )

    def merged(self, occurrence: Occurrence) -> Proposal:
        """This proposal counting one more write that proposed the same (its occurrences capped)."""
        kept = self.occurrences or [self.occurrence()]
        kept = [*kept, occurrence]
        if len(kept) > MAX_OCCURRENCES:
            kept = [kept[0], *kept[len(kept) - MAX_OCCURRENCES + 1 :]]
        return self.model_copy(update={"count": self.count + 1, "occurrences": kept})

    def update_batch(self) -> UpdateBatch:
        """The operations of an update proposal, as the batch an apply takes."""
        return UpdateBatch.model_validate({"reasoning": self.reasoning, "operations": self.operations})

    def consolidation_batch(self) -> ConsolidationBatch:
        """The operations of a consolidation proposal, as the batch a consolidation takes."""
        return ConsolidationBatch.from_dict(
            {
                "reasoning": self.reasoning,
                "operations": self.operations,
                "planned_contents": self.planned_contents,
            }
        )

    def touched(self) -> list[str]:
        """The ids of the existing skills the operations name, in the order they are named."""
        return list(self.base_images)

    def summary(self) -> str:
        """One line: the operations, e.g. ``ADD [math] Carry the one; TAG s-3``."""
        return "; ".join(_describe_operation(op) for op in self.operations)

    def touches_section(self, section: str) -> bool:
        """True if an operation adds to ``section`` or names a skill of it (by its id's prefix)."""
        prefix = f"{section_prefix(section)}-"
        return any(
            str(op.get("section") or "").strip() == section.strip()
            or str(op.get("skill_id") or "").startswith(prefix)
            for op in self.operations
        )

    def to_dict(self, *, full: bool = False) -> dict[str, Any]:
        """The proposal as plain JSON; ``full`` adds the skills as it saw them (its base images)."""
        data = self.model_dump(mode="json", exclude={"base_images", "signature", "planned_contents"})
        if full:
            data["base_images"] = self.base_images
        return data


def _describe_operation(op: dict[str, Any]) -> str:
    kind = str(op.get("type", "?"))
    if kind == "ADD":
        return f"ADD [{op.get('section', '')}] {op.get('content', '')}"
    if kind == "TAG":
        return f"TAG {op.get('skill_id')} {json.dumps(op.get('metadata', {}), sort_keys=True)}"
    if op.get("keep_id"):
        return f"MERGE {','.join(op.get('merge_ids', []))} -> {op['keep_id']}"
    ids = op.get("skill_ids") or [op.get("skill_id")]
    text = op.get("content") or op.get("new_content") or ""
    return f"{kind} {','.join(str(i) for i in ids)}{' ' + text if text else ''}"


def proposal_id(idempotency_key: str) -> str:
    """The id of the proposal a write with ``idempotency_key`` makes: a redelivery finds the same one."""
    return "p-" + hashlib.sha256(idempotency_key.encode()).hexdigest()[:12]


def signature_digest(proposal: Proposal) -> str:
    """A short hash of the proposal's kind and signature: the name of its merging key."""
    return hashlib.sha256(f"{proposal.kind.value}\n{proposal.signature}".encode()).hexdigest()[:16]


def update_signature(batch: UpdateBatch) -> str:
    """The operations of an update proposal as auto-approval compares them (order does not count)."""
    return json.dumps(sorted(operation_signature(op) for op in batch.operations))


def consolidation_signature(batch: ConsolidationBatch) -> str:
    """The operations of a consolidation proposal as auto-approval compares them (reasoning left out)."""
    ops = [{k: v for k, v in op.to_dict().items() if k != "reasoning"} for op in batch.operations]
    return json.dumps(sorted(json.dumps(op, sort_keys=True) for op in ops))


def substance_changed(base: SkillImage, current: SkillImage) -> bool:
    """True when a skill exists now and did not then (or the reverse), or says something else now."""
    if base is None or current is None:
        return (base is None) != (current is None)
    return any(base.get(field) != current.get(field) for field in _SUBSTANCE)


def decode_proposal(raw: bytes | str, key: str, field: str) -> Proposal:
    """The proposal stored in field ``field`` of the hash ``key``; CorruptDataError naming both."""
    try:
        return Proposal.model_validate_json(raw)
    except ValidationError as exc:
        raise CorruptDataError(key, f"field {field!r} holds no proposal ({one_line(exc)[:200]})") from None
