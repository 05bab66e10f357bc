"""The pending operations a SkillManager's lookup reads: update proposals only, each decoded once."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from ace_workers.core import UpdateBatch, UpdateOperation
from ace_workers.core.consolidation import ConsolidationBatch, MergeOp
from ace_workers.core.skill_lookup import PendingOperation
from ace_workers.distributed import RedisSkillbookStore
from ace_workers.distributed.store import pending_operations
from ace_workers.distributed.store.pending_operations import PendingOperations
from ace_workers.distributed.store.proposals import Proposal
from ace_workers.distributed.store.review_policy import ReviewPolicy
from tests.support.fixtures import server_or_cluster

REVIEWER = "user:reviewer"


@pytest.fixture(params=["server", "cluster"])
def redis_client(request: pytest.FixtureRequest) -> Iterator[redis.Redis]:
    """On one Redis and on Redis Cluster alike."""
    yield from server_or_cluster(request)


def propose(store: RedisSkillbookStore, content: str, key: str) -> str:
    batch = UpdateBatch(operations=[UpdateOperation(type="ADD", section="zorb", content=content)])
    return store.review.propose_update(batch, idempotency_key=key).proposal_id


def test_pending_update_operations_are_read_with_their_proposal_ids_until_decided(
    store: RedisSkillbookStore, redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    seeded = UpdateBatch(
        operations=[
            UpdateOperation(type="ADD", section="zorb", content="Reverse the digits."),
            UpdateOperation(type="ADD", section="zorb", content="Reverse digits always."),
        ]
    )
    ids = list(store.apply(seeded).report.added)
    store.review.set_policy(ReviewPolicy.everything("review"), actor=REVIEWER)
    first = propose(store, "Zorb: reverse the digits.", "k1")
    store.review.propose_consolidation(
        ConsolidationBatch(
            operations=[MergeOp(keep_id=ids[0], merge_ids=[ids[1]], merged_content="Reverse.")]
        ),
        idempotency_key="k2",
    )
    decoded: list[str] = []
    real = pending_operations.decode_proposal

    def counted(raw: bytes | str, key: str, field: str) -> Proposal:
        decoded.append(field)
        return real(raw, key, field)

    monkeypatch.setattr(pending_operations, "decode_proposal", counted)
    reader = PendingOperations(redis_client, store.keys)
    assert reader() == [PendingOperation(first, "ADD", "zorb", "", "Zorb: reverse the digits.")]
    second = propose(store, "Zorb: mind the digits.", "k3")
    assert [op.proposal_id for op in reader()] == [first, second]
    assert len(decoded) == 3  # the two proposals and the consolidation, each once
    store.review.reject(first, actor=REVIEWER)
    assert [op.proposal_id for op in reader()] == [second]
    assert len(decoded) == 3
