"""A batch's state as ``status`` and ``batch list`` say it: one with failed samples never reads as done."""

from __future__ import annotations

import json

import pytest
import redis

from ace_workers.distributed.tenancy import ApiKeys, Tenant, TenantRegistry
from tests.support.batches import ledger_batch
from tests.support.cli import invoke_raw as run
from tests.support.cli import said

PREFIX = "clistates"


@pytest.fixture
def cli_settings() -> dict[str, str]:
    """``env`` (tests/support/cli_env.py) under this module's prefix."""
    return {"ACE_QUEUE_PREFIX": PREFIX}


@pytest.mark.parametrize(
    ("done", "failed", "state", "code"),
    [(0, 4, "failed", 1), (3, 1, "done with failures", 1), (4, 0, "done", 0)],
)
def test_status_names_a_batch_with_failed_samples_and_exits_1(
    env: pytest.MonkeyPatch, redis_client: redis.Redis, done: int, failed: int, state: str, code: int
) -> None:
    ledger_batch(redis_client, PREFIX, "b1", done=done, failed=failed)
    exit_code, output = run("status", "b1")
    assert exit_code == code, output
    assert f": {state}, {done} done, {failed} failed, 0 running, 0 queued of 4" in said(output)


@pytest.mark.parametrize(
    ("done", "failed", "state", "code"),
    [(0, 4, "failed", 1), (3, 1, "done_with_failures", 1), (4, 0, "done", 0)],
)
def test_status_json_names_the_state_and_exits_as_the_text_does(
    env: pytest.MonkeyPatch, redis_client: redis.Redis, done: int, failed: int, state: str, code: int
) -> None:
    ledger_batch(redis_client, PREFIX, "b1", done=done, failed=failed)
    exit_code, output = run("status", "b1", "--json")
    assert exit_code == code, output
    report = json.loads(output)
    assert (report["state"], report["done"], report["failed"]) == (state, done, failed)


def test_a_running_batch_is_running_and_exits_0(env: pytest.MonkeyPatch, redis_client: redis.Redis) -> None:
    ledger_batch(redis_client, PREFIX, "b1", failed=1, unfinished=2)
    exit_code, output = run("status", "b1")
    assert exit_code == 0, output
    assert ": running, 0 done, 1 failed, 0 running, 2 queued of 3" in said(output)


def test_batch_list_shows_each_batch_with_its_state_newest_first(
    env: pytest.MonkeyPatch, redis_client: redis.Redis
) -> None:
    ledger_batch(redis_client, PREFIX, "old-failed", failed=2)
    ledger_batch(redis_client, PREFIX, "mid-mixed", done=1, failed=1)
    ledger_batch(redis_client, PREFIX, "new-running", unfinished=2)
    exit_code, output = run("batch", "list", "--json")
    assert exit_code == 0, output
    listed = [(row["batch_id"], row["state"]) for row in json.loads(output)]
    assert listed == [
        ("new-running", "running"),
        ("mid-mixed", "done_with_failures"),
        ("old-failed", "failed"),
    ]


def test_batch_list_as_text_names_every_batch_and_state(
    env: pytest.MonkeyPatch, redis_client: redis.Redis
) -> None:
    ledger_batch(redis_client, PREFIX, "b-failed", failed=2)
    ledger_batch(redis_client, PREFIX, "b-mixed", done=1, failed=1)
    exit_code, output = run("batch", "list")
    assert exit_code == 0, output
    # One row per batch, whatever draws the table (a box in a terminal, tab-separated elsewhere).
    (failed_row,) = [line for line in output.splitlines() if "b-failed" in line]
    (mixed_row,) = [line for line in output.splitlines() if "b-mixed" in line]
    assert "failed" in failed_row
    assert "done" not in failed_row
    assert "done with failures" in mixed_row


def test_batch_list_running_leaves_finished_batches_out(
    env: pytest.MonkeyPatch, redis_client: redis.Redis
) -> None:
    ledger_batch(redis_client, PREFIX, "finished", done=2)
    ledger_batch(redis_client, PREFIX, "going", done=1, unfinished=1)
    exit_code, output = run("batch", "list", "--running", "--json")
    assert exit_code == 0, output
    assert [row["batch_id"] for row in json.loads(output)] == ["going"]


def test_batch_list_with_no_batch_says_so(env: pytest.MonkeyPatch) -> None:
    assert run("batch", "list") == (0, "no batches\n")
    assert run("batch", "list", "--running") == (0, "no running batches\n")
    exit_code, output = run("batch", "list", "--json")
    assert (exit_code, json.loads(output)) == (0, [])


def test_dead_letters_list_with_none_says_so(env: pytest.MonkeyPatch) -> None:
    assert run("dead-letters", "list") == (0, "no dead letters\n")
    assert run("dead-letters", "list", "--batch", "b1") == (0, "no dead letters match these options\n")


def test_batch_cancel_of_a_batch_with_failures_names_its_state(
    env: pytest.MonkeyPatch, redis_client: redis.Redis
) -> None:
    ledger_batch(redis_client, PREFIX, "b1", done=1, failed=1)
    assert run("batch", "cancel", "b1") == (0, "batch b1 is done with failures already\n")


def test_status_watch_json_prints_only_the_finished_batchs_document(
    env: pytest.MonkeyPatch, redis_client: redis.Redis
) -> None:
    ledger_batch(redis_client, PREFIX, "b1", failed=2)
    exit_code, output = run("status", "b1", "--watch", "--json")
    assert exit_code == 1
    assert json.loads(output)["state"] == "failed"  # one document: no progress line before it


def test_batch_list_with_a_tenants_key_shows_only_that_tenants_batches(
    env: pytest.MonkeyPatch, redis_client: redis.Redis
) -> None:
    TenantRegistry(redis_client, prefix=PREFIX).add(Tenant("alpha", prefixes=("alpha-",)))
    ledger_batch(redis_client, PREFIX, "theirs", done=1, skillbook="book")
    ledger_batch(redis_client, PREFIX, "ours", done=1, skillbook="alpha-book")
    _, secret = ApiKeys(redis_client, prefix=PREFIX).create("alpha", "read")
    exit_code, output = run("batch", "list", "--json", "--api-key", secret)
    assert exit_code == 0, output
    assert [row["batch_id"] for row in json.loads(output)] == ["ours"]


def test_batch_lists_limit_is_the_recent_index_cap() -> None:
    from ace_workers.cli.batch import MOST_RECENT
    from ace_workers.distributed.store.batches import RECENT_BATCHES

    assert MOST_RECENT == RECENT_BATCHES


def test_batch_resume_with_another_tenants_key_is_refused_and_sends_nothing(
    env: pytest.MonkeyPatch, redis_client: redis.Redis
) -> None:
    TenantRegistry(redis_client, prefix=PREFIX).add(Tenant("alpha", prefixes=("alpha-",)))
    batches = ledger_batch(redis_client, PREFIX, "theirs", unfinished=2, skillbook="book")
    key, secret = ApiKeys(redis_client, prefix=PREFIX).create("alpha", "learn")
    exit_code, output = run("batch", "resume", "theirs", "--api-key", secret)
    assert exit_code == 4, output
    assert f"key {key.id!r} of tenant 'alpha' (role 'learn') is refused skillbook 'book'" in said(output)
    assert batches.redrives("theirs") == {}


def test_batch_resume_of_a_finished_batch_sends_nothing_and_needs_no_worker(
    env: pytest.MonkeyPatch, redis_client: redis.Redis
) -> None:
    ledger_batch(redis_client, PREFIX, "b1", done=1, failed=1)
    assert run("batch", "resume", "b1") == (0, "batch b1 is done with failures: nothing to resume\n")
