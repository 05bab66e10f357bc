"""The operations of a skillbook's pending proposals, as its SkillManager's lookup reads them each decision.

A proposal's operations never change once it is stored (a merge only counts one
more write, a decision takes it out of the queue), so each proposal is decoded
once per process: a decision costs one read of the queue, and one more only for
the proposals new since the last.
"""

from __future__ import annotations

import threading

import redis

from ...core.skill_lookup import PendingOperation
from .keys import SkillbookKeys
from .proposals import ProposalKind, decode_proposal
from .replies import decode_text, reading

__all__ = ["PENDING_LOOKUP_LIMIT", "PendingOperations"]

# The pending proposals a lookup reads: the oldest, as a reviewer sees them first.
PENDING_LOOKUP_LIMIT = 200


class PendingOperations:
    """Callable: the operations of the ``limit`` oldest pending update proposals of one skillbook."""

    def __init__(self, client: redis.Redis, keys: SkillbookKeys, limit: int = PENDING_LOOKUP_LIMIT) -> None:
        self._redis = client
        self.keys = keys
        self.limit = limit
        self._lock = threading.Lock()
        self._decoded: dict[str, list[PendingOperation]] = {}  # proposal id -> its operations

    def __call__(self) -> list[PendingOperation]:
        """The pending operations now, oldest proposal first."""
        with reading(self.keys.proposal_queue):
            queued = self._redis.zrange(self.keys.proposal_queue, 0, self.limit - 1)
        ids = [decode_text(i) for i in queued]  # type: ignore[arg-type]
        with self._lock:
            known = dict(self._decoded)
        missing = [i for i in ids if i not in known]
        if missing:
            with reading(self.keys.proposals):
                raws = self._redis.hmget(self.keys.proposals, missing)
            for proposal_id, raw in zip(missing, raws, strict=True):
                if raw is not None:  # decided and dropped since the queue was read
                    known[proposal_id] = self._operations(raw, proposal_id)
        kept = {i: known[i] for i in ids if i in known}  # decided proposals are forgotten
        with self._lock:
            self._decoded = kept
        return [operation for proposal_id in ids for operation in kept.get(proposal_id, [])]

    def _operations(self, raw: bytes | str, proposal_id: str) -> list[PendingOperation]:
        proposal = decode_proposal(raw, self.keys.proposals, proposal_id)
        if proposal.kind is not ProposalKind.UPDATE:
            return []  # a consolidation merges skills: it states no learning to restate
        return [
            PendingOperation(
                proposal_id=proposal.id,
                type=str(op.get("type") or ""),
                section=str(op.get("section") or ""),
                skill_id=str(op.get("skill_id") or ""),
                content=str(op.get("content") or ""),
            )
            for op in proposal.operations
        ]
