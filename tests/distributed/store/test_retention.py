"""Retention on the real Redis (and a cluster): each kind trimmed past its bound, kept within it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
import redis
from redis.cluster import RedisCluster

from ace_workers.console.audit import read_audit, record_action
from ace_workers.core import UpdateBatch, UpdateOperation
from ace_workers.distributed import RedisSkillbookStore
from ace_workers.distributed.store.keys import console_audit_key, dead_letters_key, erasures_key
from ace_workers.distributed.store.proposals import ProposalStatus, signature_digest
from ace_workers.distributed.store.retention import RetentionPolicy, sweep
from tests.support.fixtures import server_or_cluster
from tests.support.hooked_redis import hooked_like

PREFIX = "ace"
NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
# Nothing bounded but the kind a test looks at.
NONE = RetentionPolicy(
    dead_letter_days=0, proposal_days=0, audit_days=0, label_moves=0, evaluations=0, erasure_days=0
)


@pytest.fixture(params=["server", "cluster"])
def redis_client(request: pytest.FixtureRequest) -> Iterator[redis.Redis]:
    """The sweep on one Redis and on Redis Cluster alike."""
    yield from server_or_cluster(request)


def unbounded_store(client: redis.Redis, name: str = "book") -> RedisSkillbookStore:
    """A store whose writers keep everything, so only the sweep trims."""
    return RedisSkillbookStore(client, name, retention=NONE)


def letter(parked: datetime | None, n: int) -> str:
    body: dict[str, object] = {"step": "ApplyStep", "kwargs": {"n": n}, "payload": {}, "error": "boom"}
    if parked is not None:
        body["parked_at"] = parked.isoformat()
    return json.dumps(body)


def add(content: str) -> UpdateOperation:
    return UpdateOperation(type="ADD", section="lessons", content=content)


def test_dead_letters_older_than_their_days_go_and_younger_and_undated_ones_stay(
    redis_client: redis.Redis,
) -> None:
    key = dead_letters_key(PREFIX)
    old = [letter(NOW - timedelta(days=40, minutes=n), n) for n in range(5)]
    undated = letter(None, 99)
    young = [letter(NOW - timedelta(days=2), 7), letter(NOW - timedelta(hours=1), 8)]
    redis_client.rpush(key, old[0], old[1], undated, old[2], old[3], old[4], *young, "not json")
    policy = RetentionPolicy(dead_letter_days=30)

    counts = sweep(redis_client, PREFIX, policy, NOW, chunk=2)

    assert counts["dead_letters"] == 5
    assert [raw.decode() for raw in redis_client.lrange(key, 0, -1)] == [undated, *young, "not json"]


def test_audit_entries_older_than_their_days_go(redis_client: redis.Redis) -> None:
    key = console_audit_key(PREFIX)
    for days in (400, 380, 366):
        stamp = int((NOW - timedelta(days=days)).timestamp() * 1000)
        redis_client.xadd(key, {"entry": json.dumps({"old": days})}, id=f"{stamp}-0")
    kept = record_action(redis_client, PREFIX, user="ann", action="retry", target="x", outcome="ok")

    counts = sweep(redis_client, PREFIX, RetentionPolicy(audit_days=365), datetime.now(UTC), chunk=2)

    assert counts["audit"] == 3
    assert read_audit(redis_client, PREFIX) == [kept]


def test_the_audit_writer_drops_entries_older_than_its_days(redis_client: redis.Redis) -> None:
    key = console_audit_key(PREFIX)
    stamp = int((datetime.now(UTC) - timedelta(days=10)).timestamp() * 1000)
    for n in range(250):
        redis_client.xadd(key, {"entry": "{}"}, id=f"{stamp}-{n + 1}")

    record_action(redis_client, PREFIX, user="ann", action="a", target="t", outcome="ok", kept_days=5)

    # MINID ~ drops whole stream nodes (100 entries each by default), so the write stays cheap:
    # two old nodes go, the rest is the sweep's to drop exactly.
    assert redis_client.xlen(key) <= 51
    assert sweep(redis_client, PREFIX, RetentionPolicy(audit_days=5), datetime.now(UTC))["audit"] <= 50
    assert [entry.user for entry in read_audit(redis_client, PREFIX)] == ["ann"]


def test_the_label_log_writer_keeps_about_its_count(redis_client: redis.Redis) -> None:
    store = RedisSkillbookStore(redis_client, "book", retention=RetentionPolicy(label_moves=5))
    store.apply(UpdateBatch(operations=[add("seed")]))
    for _ in range(250):
        store.labels.set("prod", 1, actor="user:ann")

    # MAXLEN ~ trims whole stream nodes: about the count, never fewer.
    assert 5 <= redis_client.xlen(store.keys.label_log) <= 105


def decided_and_pending(client: redis.Redis) -> tuple[RedisSkillbookStore, str, str, str]:
    """A skillbook with one approved, one rejected and one pending proposal; their ids."""
    store = unbounded_store(client)
    store.apply(UpdateBatch(operations=[add("seed")]))  # registers the skillbook
    ids = [
        store.review.propose_update(UpdateBatch(operations=[add(text)]), idempotency_key=text).proposal_id
        for text in ("approve me", "reject me", "wait")
    ]
    store.review.approve(ids[0], actor="user:ann")
    store.review.reject(ids[1], actor="user:ann")
    return store, ids[0], ids[1], ids[2]


def test_decided_proposals_past_their_days_go_and_pending_ones_never_do(redis_client: redis.Redis) -> None:
    store, approved, rejected, pending = decided_and_pending(redis_client)
    policy = RetentionPolicy(proposal_days=90)
    later = datetime.now(UTC) + timedelta(days=91)

    counts = sweep(redis_client, PREFIX, policy, later, chunk=1)

    assert counts["decided_proposals"] == 2
    remaining = store.review.proposals(status=None)
    assert [(p.id, p.status) for p in remaining] == [(pending, ProposalStatus.PENDING)]
    assert {approved, rejected}.isdisjoint(p.id for p in remaining)


def test_decided_proposals_within_their_days_stay(redis_client: redis.Redis) -> None:
    store, *_ = decided_and_pending(redis_client)
    soon = datetime.now(UTC) + timedelta(days=89)

    assert sweep(redis_client, PREFIX, RetentionPolicy(proposal_days=90), soon)["decided_proposals"] == 0
    assert len(store.review.proposals(status=None)) == 3


def test_the_label_log_keeps_its_newest_moves(redis_client: redis.Redis) -> None:
    store = unbounded_store(redis_client)
    for n in range(12):
        store.apply(UpdateBatch(operations=[add(f"skill {n}")]))
        store.labels.set("prod", n + 1, actor="user:ann")

    counts = sweep(redis_client, PREFIX, RetentionPolicy(label_moves=5), NOW, chunk=2)

    assert counts["label_log"] == 7
    assert [move.to_version for move in store.labels.history("prod")] == [12, 11, 10, 9, 8]


def test_evaluations_keep_their_newest_reports(redis_client: redis.Redis) -> None:
    store = unbounded_store(redis_client)
    store.apply(UpdateBatch(operations=[add("seed")]))
    for n in range(10):
        store.evaluations.record({"n": n})

    counts = sweep(redis_client, PREFIX, RetentionPolicy(evaluations=4), NOW, chunk=3)

    assert counts["evaluations"] == 6
    assert [report["n"] for report in store.evaluations.recent(20)] == [9, 8, 7, 6]


def test_the_evaluations_writer_keeps_the_configured_count(redis_client: redis.Redis) -> None:
    store = RedisSkillbookStore(redis_client, "book", retention=RetentionPolicy(evaluations=3))
    for n in range(5):
        store.evaluations.record({"n": n})

    assert [report["n"] for report in store.evaluations.recent(20)] == [4, 3, 2]


def populated(client: redis.Redis) -> None:
    """Every kind past its default bound."""
    decided_and_pending(client)
    store = unbounded_store(client)
    for n in range(3):
        store.evaluations.record({"n": n})
        store.labels.set("prod", 1, actor="user:ann")
    client.rpush(dead_letters_key(PREFIX), letter(NOW - timedelta(days=400), 1))
    client.xadd(console_audit_key(PREFIX), {"entry": "{}"}, id="1000-0")


SMALL = RetentionPolicy(label_moves=1, evaluations=1)


def snapshot(client: redis.Redis) -> dict[str, object]:
    store = unbounded_store(client)
    return {
        "letters": client.lrange(dead_letters_key(PREFIX), 0, -1),
        "audit": client.xlen(console_audit_key(PREFIX)),
        "proposals": sorted(p.id for p in store.review.proposals(status=None)),
        "moves": client.xlen(store.keys.label_log),
        "evaluations": client.lrange(store.keys.evaluations, 0, -1),
    }


def test_a_dry_run_counts_and_changes_nothing(redis_client: redis.Redis) -> None:
    populated(redis_client)
    before = snapshot(redis_client)
    later = datetime.now(UTC) + timedelta(days=91)

    counts = sweep(redis_client, PREFIX, SMALL, later, dry_run=True)

    assert counts == {
        "dead_letters": 1,
        "decided_proposals": 2,
        "audit": 1,
        "label_log": 2,
        "evaluations": 2,
        "erasures": 0,
    }
    assert snapshot(redis_client) == before
    assert sweep(redis_client, PREFIX, SMALL, later) == counts  # what it said is what goes


def test_a_second_sweep_changes_nothing(redis_client: redis.Redis) -> None:
    populated(redis_client)
    later = datetime.now(UTC) + timedelta(days=91)
    sweep(redis_client, PREFIX, SMALL, later)
    after_first = snapshot(redis_client)

    counts = sweep(redis_client, PREFIX, SMALL, later)

    assert counts == dict.fromkeys(counts, 0)
    assert snapshot(redis_client) == after_first


def test_zero_keeps_every_kind_forever(redis_client: redis.Redis) -> None:
    populated(redis_client)
    before = snapshot(redis_client)

    counts = sweep(redis_client, PREFIX, NONE, datetime.now(UTC) + timedelta(days=10_000))

    assert counts == dict.fromkeys(counts, 0)
    assert snapshot(redis_client) == before


def auto_rejected(client: redis.Redis) -> tuple[RedisSkillbookStore, str]:
    """A skillbook with one proposal rejected at once as a duplicate, and its signature key, which
    still names it (a duplicate proposed again merges into it)."""
    store = unbounded_store(client)
    store.apply(UpdateBatch(operations=[add("seed")]))
    outcome = store.review.propose_update(
        UpdateBatch(operations=[add("seed")]), idempotency_key="again", reject_duplicates=True
    )
    signature = store.keys.proposal_signature(signature_digest(store.review.get(outcome.proposal_id)))
    assert client.get(signature) == outcome.proposal_id.encode()
    return store, signature


def test_a_swept_proposal_takes_its_signature_key_along(redis_client: redis.Redis) -> None:
    store, signature = auto_rejected(redis_client)

    counts = sweep(
        redis_client, PREFIX, RetentionPolicy(proposal_days=90), datetime.now(UTC) + timedelta(days=91)
    )

    assert counts["decided_proposals"] == 1
    assert store.review.proposals(status=None) == []
    assert redis_client.exists(signature) == 0


def test_a_signature_key_another_proposal_claims_meanwhile_stays(
    redis_client: redis.Redis, request: pytest.FixtureRequest
) -> None:
    store, signature = auto_rejected(redis_client)
    claims = iter(["p-newer"])

    def claim() -> None:  # once, between the sweep's reads and its writes
        for other in claims:
            redis_client.set(signature, other)

    url = request.getfixturevalue("redis_url") if not isinstance(redis_client, RedisCluster) else ""
    sweeper = hooked_like(redis_client, url, claim)
    try:
        counts = sweep(
            sweeper, PREFIX, RetentionPolicy(proposal_days=90), datetime.now(UTC) + timedelta(days=91)
        )
    finally:
        sweeper.close()

    assert counts["decided_proposals"] == 1
    assert store.review.proposals(status=None) == []
    assert redis_client.get(signature) == b"p-newer"


def test_erasure_records_older_than_their_bound_go_and_younger_ones_stay(redis_client: redis.Redis) -> None:
    key = erasures_key(PREFIX)
    # Pushed newest first, as forget writes them: the oldest is the tail.
    for days in (400, 30, 5):
        redis_client.lpush(
            key, json.dumps({"id": f"e{days}", "at": (NOW - timedelta(days=days)).isoformat()})
        )
    policy = RetentionPolicy(**{**NONE.__dict__, "erasure_days": 100})

    assert sweep(redis_client, PREFIX, policy, NOW, dry_run=True)["erasures"] == 1
    assert sweep(redis_client, PREFIX, policy, NOW)["erasures"] == 1
    assert [json.loads(raw)["id"] for raw in redis_client.lrange(key, 0, -1)] == ["e5", "e30"]
    assert sweep(redis_client, PREFIX, policy, NOW)["erasures"] == 0
