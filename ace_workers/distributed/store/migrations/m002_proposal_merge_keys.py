"""Migration 2 (schema 1 to 2): each pending review proposal is named by its merge key.

Proposals stored before identical proposals were merged (commit 42d4e6b) have no signature key
(``SkillbookKeys.proposal_signature``): a new write of the same operations would open a proposal
beside them, and the queue may hold several pending proposals of one idea already. Per
skillbook, oldest first, the first pending proposal of each signature gets the key; each later
pending one of the same signature is merged into it (its count and occurrences added) and
marked rejected by ``migrate``, with a note naming the proposal it went into. That is how the
store keeps a duplicate it refused at once (``auto-reject``): nothing is deleted, the decision
makes no version, and ``review show`` still finds it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import redis

from ....core.skill import utc_now
from ..errors import VersionConflict
from ..keys import SkillbookKeys
from ..proposals import (
    Decision,
    Proposal,
    ProposalKind,
    ProposalStatus,
    consolidation_signature,
    decode_proposal,
    signature_digest,
    update_signature,
)
from ..replies import decode_text, optional_text
from ..store import list_skillbooks
from ..transactions import watch_keys
from .base import Changes, Progress

__all__ = ["MIGRATE_ACTOR", "ProposalMergeKeys"]

# Who decided the duplicates this migration merged (a review decision names its actor).
MIGRATE_ACTOR = "migrate"
# A skillbook's queue changed between the read and the commit: try again this often.
_ATTEMPTS = 10
_KEYED = "pending proposals given their merge key"
_MERGED = "identical pending proposals merged into the first"


class ProposalMergeKeys:
    """Write the merge key of every pending proposal lacking one; merge identical pending ones."""

    number = 2
    description = "name each pending review proposal by its merge key, merging identical ones into the first"
    # An old worker still running would store proposals without the key after this ran.
    fleet_may_run = False

    def plan(self, client: redis.Redis, prefix: str) -> Changes:
        plans = [_plan(client, keys) for keys in _skillbooks(client, prefix)]
        return {_KEYED: sum(plan.keyed for plan in plans), _MERGED: sum(plan.merged for plan in plans)}

    def apply(self, client: redis.Redis, prefix: str, progress: Progress) -> Changes:
        changes = {_KEYED: 0, _MERGED: 0}
        for done, keys in enumerate(_skillbooks(client, prefix), start=1):
            plan = _apply_to(client, keys)
            changes[_KEYED] += plan.keyed
            changes[_MERGED] += plan.merged
            progress(done)
        return changes


@dataclass
class _Group:
    """The pending proposals of one signature: the one that keeps the key, and those merged into it."""

    digest: str
    kept: Proposal
    merged: list[Proposal] = field(default_factory=list)
    keyed: bool = False  # the key names ``kept`` already (a run that was interrupted wrote it)


@dataclass
class _SkillbookPlan:
    groups: list[_Group]

    @property
    def keyed(self) -> int:
        return sum(not group.keyed for group in self.groups)

    @property
    def merged(self) -> int:
        return sum(len(group.merged) for group in self.groups)


def _skillbooks(client: redis.Redis, prefix: str) -> list[SkillbookKeys]:
    return [SkillbookKeys(name, prefix) for name in list_skillbooks(client, prefix)]


def _plan(client: redis.Redis, keys: SkillbookKeys) -> _SkillbookPlan:
    """Read a skillbook's pending proposals and group them by signature, oldest first; reads only."""
    queued: list[bytes] = client.zrange(keys.proposal_queue, 0, -1)  # type: ignore[assignment]
    ids = [decode_text(member) for member in queued]  # oldest first: the score is when it was proposed
    raws = client.hmget(keys.proposals, ids) if ids else []
    groups: dict[str, _Group] = {}
    for proposal_id, raw in zip(ids, raws, strict=True):
        if raw is None:
            continue  # a queue entry without its proposal: nothing to name
        proposal = _with_signature(decode_proposal(raw, keys.proposals, proposal_id))
        if proposal.status is not ProposalStatus.PENDING:
            continue
        digest = signature_digest(proposal)
        if digest in groups:
            groups[digest].merged.append(proposal)
        else:
            groups[digest] = _Group(digest, proposal)
    for group in groups.values():
        named = optional_text(client.get(keys.proposal_signature(group.digest)))
        group.keyed = named == group.kept.id
    return _SkillbookPlan([group for group in groups.values() if not group.keyed or group.merged])


def _with_signature(proposal: Proposal) -> Proposal:
    """``proposal`` with its signature, computed from its operations if it was stored without one."""
    if proposal.signature:
        return proposal
    signature = (
        update_signature(proposal.update_batch())
        if proposal.kind is ProposalKind.UPDATE
        else consolidation_signature(proposal.consolidation_batch())
    )
    return proposal.model_copy(update={"signature": signature})


def _absorbing(kept: Proposal, duplicate: Proposal) -> Proposal:
    """``kept`` counting the writes of ``duplicate`` too (its occurrences capped as a merge caps them)."""
    occurrences = duplicate.occurrences or [duplicate.occurrence()]
    for occurrence in occurrences:
        kept = kept.merged(occurrence)
    # merged() counts one write per occurrence; a duplicate may stand for more (its count).
    return kept.model_copy(update={"count": kept.count - len(occurrences) + duplicate.count})


def _apply_to(client: redis.Redis, keys: SkillbookKeys) -> _SkillbookPlan:
    """Key and merge one skillbook's pending proposals in one transaction; what it changed."""
    with client.pipeline(transaction=True) as pipe:
        for _ in range(_ATTEMPTS):
            try:
                watch_keys(pipe, keys.proposal_queue, keys.proposals, keys.proposal_decisions)
                plan = _plan(pipe, keys)
                if not plan.groups:
                    pipe.unwatch()
                    return plan
                pipe.multi()
                for group in plan.groups:
                    _write_group(pipe, keys, group)
                pipe.execute()
                return plan
            except redis.WatchError:
                continue
    raise VersionConflict(keys.name, _ATTEMPTS, "naming its proposals by their merge keys")  # migrate again


def _write_group(pipe: redis.client.Pipeline, keys: SkillbookKeys, group: _Group) -> None:
    """Inside MULTI: the kept proposal merged and named by the key, each duplicate decided."""
    kept = group.kept
    for duplicate in group.merged:
        kept = _absorbing(kept, duplicate)
        note = f"merged into {kept.id} by migration 2: it proposed the same operations"
        decision = Decision(actor=MIGRATE_ACTOR, time=utc_now(), note=note, no_op=True)
        decided = duplicate.model_copy(update={"status": ProposalStatus.REJECTED, "decision": decision})
        pipe.hset(keys.proposals, decided.id, decided.model_dump_json())
        pipe.zrem(keys.proposal_queue, decided.id)
    if group.merged:
        # Every change of a proposal's status bumps it: a reviewer deciding meanwhile reads again.
        pipe.incrby(keys.proposal_decisions, len(group.merged))
    pipe.hset(keys.proposals, kept.id, kept.model_dump_json())
    pipe.set(keys.proposal_signature(group.digest), kept.id)
