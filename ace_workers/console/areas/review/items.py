"""A proposal as the review pages show it: its operations spelled out, its evidence, its links.

The JSON of a proposal is the store's own (``Proposal.to_dict``); this adds what a
reviewer reads beside it: one row per operation (type, section, the skills it names,
the text it writes), the Reflector's insights it came from, the batch to follow, and
the conflicts now. Everything here is data: the templates escape it.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from ....distributed.store.proposals import Occurrence, Proposal
from ....distributed.store.review_policy import POLICY_SUBJECTS, ReviewPolicy

__all__ = ["policy_item", "proposal_item"]

# The keys of an operation that name one skill, or several (consolidation's MERGE and KEEP).
_ONE_SKILL = ("skill_id", "keep_id")
_SKILLS = ("merge_ids", "skill_ids")
# The text an operation writes: an update's content, a consolidation's rewrite or merged text.
_TEXTS = ("content", "new_content", "merged_content")


def policy_item(policy: ReviewPolicy) -> dict[str, Any]:
    """The review policy: each kind of operation's mode, auto-approval, and the one-line form."""
    return {
        "modes": {subject: policy.mode_of(subject) for subject in POLICY_SUBJECTS},
        "auto_approve_after": policy.auto_approve_after,
        "duplicates": policy.duplicates,
        "describe": policy.describe(),
        "reviews_anything": policy.reviews_anything,
    }


def proposal_item(
    proposal: Proposal,
    conflicts: list[str],
    *,
    full: bool = False,
    base: str = "",
    duplicate_of: list[str] | None = None,
) -> dict[str, Any]:
    """The proposal's JSON, with its operations spelled out, its evidence, conflicts, the active
    skills it restates (``duplicate_of``: approving it changes nothing) and links.

    ``base`` is the skillbook's URL (``/skillbooks/NAME``); ``full`` adds the skills
    as the proposal saw them.
    """
    data = proposal.to_dict(full=full)
    batch = proposal.source.get("batch")
    data.update(
        summary=proposal.summary(),
        operation_types=sorted({str(op.get("type", "?")) for op in proposal.operations}),
        described=[_operation(op, base) for op in proposal.operations],
        evidence=[_insight(source) for source in proposal.insight_sources],
        conflicts=conflicts,
        duplicate_of=duplicate_of or [],
        described_occurrences=[_occurrence(o) for o in proposal.occurrences],
        url=f"{base}/review/{quote(proposal.id, safe='')}",
        batch_url=f"/batches/{quote(str(batch), safe='')}" if batch else None,
    )
    return data


def _operation(op: dict[str, Any], base: str) -> dict[str, Any]:
    """One operation as a row: its type, section, the skills it names (linked), its text and why."""
    ids = [str(op[key]) for key in _ONE_SKILL if op.get(key)]
    ids += [str(skill_id) for key in _SKILLS for skill_id in op.get(key) or []]
    text = next((str(op[key]) for key in _TEXTS if op.get(key)), "")
    why = str(op.get("justification") or op.get("reasoning") or "")
    source = op.get("insight_source")
    insight = source.get("insight") if isinstance(source, dict) else None
    return {
        "type": str(op.get("type", "?")),
        "section": str(op.get("section") or ""),
        "skills": [{"id": i, "url": f"{base}/skills/{quote(i, safe='')}"} for i in ids],
        "text": text,
        "metadata": op.get("metadata") or {},
        "why": why,
        "evidence": str(op.get("evidence") or ""),
        "insight": str(insight) if insight else "",
    }


def _insight(source: dict[str, Any]) -> dict[str, Any]:
    """Where the Reflector learned an operation: its insight, and the batch, sample, trace it read."""
    batch = source.get("batch_id")
    return {
        "insight": str(source.get("insight") or ""),
        "batch_id": str(batch) if batch else None,
        "batch_url": f"/batches/{quote(str(batch), safe='')}" if batch else None,
        "epoch": source.get("epoch"),
        "sample_index": source.get("sample_index"),
        "sample_id": source.get("sample_id"),
        "trace_id": source.get("trace_id"),
        "recipe": source.get("recipe"),
        "actor": source.get("actor"),
    }


def _occurrence(occurrence: Occurrence) -> dict[str, Any]:
    """One write that proposed it: its batch (linked), epoch, sample and when."""
    source = occurrence.source
    batch = source.get("batch")
    return {
        "key": occurrence.key,
        "at": occurrence.at,
        "batch": str(batch) if batch else None,
        "batch_url": f"/batches/{quote(str(batch), safe='')}" if batch else None,
        "epoch": source.get("epoch"),
        "sample": source.get("sample"),
        "source": source,
    }
