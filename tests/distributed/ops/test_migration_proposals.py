"""Migration 2 on real Redis: pending proposals stored without merge keys get them, one per idea.

The proposals are written as the store wrote them before identical proposals were merged (the
proposal hash, the pending queue, the write's idempotency key; no ``proposals:same:`` key), on
data stamped schema 1; then ``ace-workers migrate`` runs as an operator would run it.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest
import redis

from ace_workers.core import Skillbook
from ace_workers.core.updates import UpdateBatch
from ace_workers.distributed.ops.migration import migrate
from ace_workers.distributed.settings import WorkerSettings
from ace_workers.distributed.store.keys import SkillbookKeys
from ace_workers.distributed.store.migrations import MIGRATIONS, Changes, Progress
from ace_workers.distributed.store.proposals import (
    Decision,
    Proposal,
    ProposalKind,
    ProposalStatus,
    proposal_id,
    signature_digest,
    update_signature,
)
from ace_workers.distributed.store.schema import SCHEMA_VERSION, read_schema, record_schema
from ace_workers.distributed.store.store import RedisSkillbookStore
from ace_workers.distributed.worker.runtime import WorkerRuntime
from tests.support.cli import Ran, run_console_script

PREFIX = "mergekeys"
START = datetime(2026, 11, 1, tzinfo=UTC)
KEYED = "pending proposals given their merge key"
MERGED = "identical pending proposals merged into the first"

Ace = Callable[..., Ran]


@pytest.fixture
def cli_settings() -> dict[str, str]:
    """``env`` (tests/support/cli_env.py) under this module's prefix."""
    return {"ACE_QUEUE_PREFIX": PREFIX}


@pytest.fixture
def cli_stamped() -> bool:
    """Unstamped: the tests stamp schema 1, as the data was before this migration."""
    return False


@pytest.fixture
def ace(env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Ace:
    return lambda *args: run_console_script(env, capsys, *args)


def batch_adding(content: str) -> UpdateBatch:
    return UpdateBatch.model_validate(
        {"reasoning": "r", "operations": [{"type": "ADD", "section": "math", "content": content}]}
    )


def store_the_old_way(
    client: redis.Redis, book: str, write: str, content: str, minute: int, *, decided: bool = False
) -> str:
    """A proposal of ``content`` as the store wrote one before merging: no merge key; its id."""
    keys = SkillbookKeys(book, PREFIX)
    created = START + timedelta(minutes=minute)
    proposal = Proposal(
        id=proposal_id(write),
        skillbook=book,
        kind=ProposalKind.UPDATE,
        operations=[op.model_dump(exclude_none=True) for op in batch_adding(content).operations],
        source={"batch": "b1", "epoch": 1, "sample": minute, "step": "ApplyStep"},
        base_version=1,
        created_at=created.isoformat(),
        idempotency_key=write,
        signature=update_signature(batch_adding(content)),
    )
    if decided:
        decision = Decision(actor="user:ann", time=created.isoformat(), note="no")
        proposal = proposal.model_copy(update={"status": ProposalStatus.REJECTED, "decision": decision})
    client.hset(keys.proposals, proposal.id, proposal.model_dump_json())
    if not decided:
        client.zadd(keys.proposal_queue, {proposal.id: created.timestamp()})
    client.set(keys.idempotency(f"proposal:{write}"), proposal.id, ex=3600)
    return proposal.id


def old_queues(client: redis.Redis) -> dict[str, list[str]]:
    """Two skillbooks of schema 1: 'a' with the idea X three times (and once rejected), Y once;
    'b' with Z once. The ids, by what they propose."""
    for name in ("a", "b"):
        book = Skillbook()
        book.add_skill("general", f"Check units ({name}).")
        RedisSkillbookStore(client, name, prefix=PREFIX).import_skillbook(book)
    ids = {
        "rejected X": [store_the_old_way(client, "a", "w0", "Carry the one.", 0, decided=True)],
        "X": [store_the_old_way(client, "a", f"w{n}", "Carry the one.", n) for n in (1, 3, 4)],
        "Y": [store_the_old_way(client, "a", "w2", "Borrow ten.", 2)],
        "Z": [store_the_old_way(client, "b", "w5", "Carry the one.", 5)],
    }
    record_schema(client, PREFIX, 1)
    return ids


def pending(client: redis.Redis, book: str) -> dict[str, Proposal]:
    store = RedisSkillbookStore(client, book, prefix=PREFIX)
    return {p.id: p for p in store.review.proposals(ProposalStatus.PENDING)}


def merge_key(client: redis.Redis, book: str, proposal: Proposal) -> bytes | None:
    value: bytes | None = client.get(
        SkillbookKeys(book, PREFIX).proposal_signature(signature_digest(proposal))
    )
    return value


def contents(client: redis.Redis) -> dict[bytes, object]:
    """Every key's value: a hash's fields (a DUMP of a large hash changes with a read's rehashing)."""
    return {
        key: client.hgetall(key) if client.type(key) == b"hash" else client.dump(key)
        for key in client.scan_iter()
    }


def test_a_dry_run_counts_the_keys_and_merges_and_changes_nothing(
    ace: Ace, redis_client: redis.Redis
) -> None:
    old_queues(redis_client)
    before = contents(redis_client)
    ran = ace("migrate", "--dry-run")
    assert ran.code == 0, ran
    assert f"would change: {KEYED}: 3; {MERGED}: 2" in ran.out
    assert contents(redis_client) == before


def test_migrate_leaves_one_pending_proposal_per_idea_counting_the_merged_writes(
    ace: Ace, redis_client: redis.Redis
) -> None:
    ids = old_queues(redis_client)
    ran = ace("migrate")
    assert ran.code == 0, ran
    assert f"changed: {KEYED}: 3; {MERGED}: 2" in ran.out
    assert read_schema(redis_client, PREFIX).version == SCHEMA_VERSION
    first_x = ids["X"][0]
    in_a = pending(redis_client, "a")
    assert sorted(in_a) == sorted([first_x, *ids["Y"]])
    assert in_a[first_x].count == 3
    assert [o.key for o in in_a[first_x].occurrences] == ["w1", "w3", "w4"]
    assert in_a[ids["Y"][0]].count == 1
    assert sorted(pending(redis_client, "b")) == ids["Z"]  # the same idea in another skillbook stays


def test_the_merged_duplicates_are_rejected_by_migrate_naming_the_one_they_went_into(
    ace: Ace, redis_client: redis.Redis
) -> None:
    ids = old_queues(redis_client)
    assert ace("migrate").code == 0
    review = RedisSkillbookStore(redis_client, "a", prefix=PREFIX).review
    first_x = ids["X"][0]
    for duplicate in ids["X"][1:]:
        decided = review.get(duplicate)
        assert decided.status is ProposalStatus.REJECTED
        assert decided.decision is not None
        assert (decided.decision.actor, decided.decision.no_op) == ("migrate", True)
        assert (
            decided.decision.note == f"merged into {first_x} by migration 2: it proposed the same operations"
        )
    assert review.get(ids["rejected X"][0]).decision == Decision(
        actor="user:ann", time=START.isoformat(), note="no"
    )  # decided before: untouched


def test_after_migrate_a_new_write_of_the_same_idea_merges_into_the_kept_proposal(
    ace: Ace, redis_client: redis.Redis
) -> None:
    ids = old_queues(redis_client)
    assert ace("migrate").code == 0
    first_x = ids["X"][0]
    assert merge_key(redis_client, "a", pending(redis_client, "a")[first_x]) == first_x.encode()
    review = RedisSkillbookStore(redis_client, "a", prefix=PREFIX).review
    outcome = review.propose_update(batch_adding("Carry the one."), idempotency_key="w9")
    assert (outcome.proposal_id, outcome.merged, outcome.count) == (first_x, True, 4)
    assert len(pending(redis_client, "a")) == 2


def test_migrate_interrupted_after_one_skillbook_finishes_on_the_next_run(
    redis_client: redis.Redis, redis_url: str
) -> None:
    ids = old_queues(redis_client)
    runtime = WorkerRuntime(WorkerSettings(queue_prefix=PREFIX), redis_url, schema_checked=False)
    merge_keys = MIGRATIONS[1]

    class Interrupted(Exception):
        pass

    def stop_after_the_first(done: int) -> None:
        raise Interrupted

    class Interrupting:
        """Migration 2, stopped after its first skillbook as a killed run would be."""

        number, description, fleet_may_run = 2, merge_keys.description, False

        def plan(self, client: redis.Redis, prefix: str) -> Changes:
            return merge_keys.plan(client, prefix)

        def apply(self, client: redis.Redis, prefix: str, progress: Progress) -> Changes:
            return merge_keys.apply(client, prefix, stop_after_the_first)

    with pytest.raises(Interrupted):
        migrate(runtime, migrations=[MIGRATIONS[0], Interrupting()])
    assert read_schema(redis_client, PREFIX).version == 1  # skillbook 'a' done, the stamp not moved
    assert len(pending(redis_client, "a")) == 2
    run = migrate(runtime)
    assert run.steps[-1].changes == {KEYED: 1, MERGED: 0}  # only 'b' was left
    assert pending(redis_client, "a")[ids["X"][0]].count == 3  # not merged twice
    assert merge_key(redis_client, "b", pending(redis_client, "b")[ids["Z"][0]]) == ids["Z"][0].encode()
    assert read_schema(redis_client, PREFIX).version == SCHEMA_VERSION
    runtime.close()
