"""`ace-workers forget`: one selector, --dry-run lists, a second run says nothing matched, --history lists.

The fleet's state is planted as workers leave it (a finished batch's inputs and records, a dead
letter); what every place holds after a real run is tests/operations/test_forget.py's business.
"""

from __future__ import annotations

import json

import pytest
import redis

from ace_workers.distributed.store.batches import BatchStore
from ace_workers.distributed.store.keys import batch_key, dead_letters_key
from ace_workers.distributed.tenancy import ApiKeys, Tenant, TenantRegistry
from tests.support.cli import invoke_raw as run
from tests.support.cli import said
from tests.support.redis_scan import places_holding

PREFIX = "cliforget"
MARKER = "m4f1c2e3d"


@pytest.fixture
def cli_settings() -> dict[str, str]:
    """``env`` under this module's prefix."""
    return {"ACE_QUEUE_PREFIX": PREFIX}


def payload(user: str, note: str) -> dict[str, object]:
    trace = {"question": "Solve the flux puzzle. Input: abc", "metadata": {"user_id": user, "note": note}}
    return {"v": 1, "sample": None, "trace": trace, "metadata": {}}


@pytest.fixture
def planted(env: pytest.MonkeyPatch, redis_client: redis.Redis) -> str:
    """A finished batch of two samples (u1's, u2's) with their records, and a dead letter of u1's; its id."""
    batches = BatchStore(redis_client, prefix=PREFIX, ttl_seconds=3600)
    batches.create(
        "b-1", skillbook="support", recipe="trace_analyser", per_epoch=2, epochs=1, skills_at_start=0
    )
    batches.store_items("b-1", [payload("u1", MARKER), payload("u2", "kept")])
    batches.record_done("b-1", 1, 1, payload("u1", MARKER))
    batches.record_done("b-1", 1, 2, payload("u2", "kept"))
    letter = {
        "step": "ReflectStep",
        "kwargs": {"batch_id": "b-0", "sample_index": 1, "skillbook": "support", "epoch": 1},
        "payload": payload("u1", MARKER),
        "error": "boom",
    }
    redis_client.rpush(dead_letters_key(PREFIX), json.dumps(letter))
    return "b-1"


def test_forget_erases_the_subject_and_a_second_run_says_nothing_matched(
    planted: str, redis_client: redis.Redis
) -> None:
    code, output = run("forget", "--subject", "metadata.user_id=u1")

    assert code == 0, output
    lines = output.splitlines()
    assert lines[0] == "subject metadata.user_id=u1: 2 samples matched; erased 3 records"
    assert "  batch_items: 1" in lines
    assert "  dead_letters: 1" in lines
    assert places_holding(redis_client, MARKER) == []
    assert places_holding(redis_client, "kept") != []
    records = BatchStore(redis_client, prefix=PREFIX, ttl_seconds=3600).records(planted)
    assert records["e1:1"] == {"outcome": "done", "erased": True}

    code, output = run("forget", "--subject", "metadata.user_id=u1")
    assert code == 0, output
    assert said(output).startswith("nothing matched subject metadata.user_id=u1: nothing to erase")


def test_a_dry_run_lists_and_erases_nothing(planted: str, redis_client: redis.Redis) -> None:
    code, output = run("forget", "--subject", "metadata.user_id=u1", "--dry-run", "--json")

    assert code == 0, output
    result = json.loads(output)
    assert result["dry_run"] is True
    assert result["counts"]["batch_items"] == 1
    assert result["counts"]["dead_letters"] == 1
    assert MARKER.encode() in redis_client.lindex(batch_key(PREFIX, planted, "items"), 0)  # type: ignore[operator]
    code, output = run("forget", "--history", "--json")
    assert (code, json.loads(output)) == (0, [])


def test_history_lists_each_erasure_newest_first(planted: str) -> None:
    run("forget", "--batch", planted)
    run("forget", "--trace", "t-unknown")

    code, output = run("forget", "--history", "--json")

    assert code == 0, output
    records = json.loads(output)
    assert [record["selector"] for record in records] == [
        {"kind": "trace", "value": "t-unknown"},
        {"kind": "batch", "value": planted},
    ]
    assert records[1]["counts"]["batch_items"] == 2
    assert all(MARKER not in json.dumps(record) for record in records)
    code, output = run("forget", "--history")
    assert "batch b-1" in output


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (["--subject", "metadata.user_id"], "a subject is PATH=VALUE"),
        (["--subject", "metadata.user_id="], "the value is empty"),
        (["--trace", " "], "the value is empty"),
        ([], "give exactly one of --trace, --sample, --batch, --subject"),
        (["--trace", "t-1", "--batch", "b-1"], "give exactly one of"),
        (["--trace", "t-1", "--archive-derived", "--remove-derived"], "give one of --archive-derived"),
    ],
)
def test_a_bad_selector_is_refused_in_one_line_and_nothing_is_erased(
    planted: str, redis_client: redis.Redis, args: list[str], problem: str
) -> None:
    code, output = run("forget", *args)

    assert code == 2, output
    assert problem in said(output)
    assert places_holding(redis_client, MARKER) != []


def test_a_key_below_admin_is_refused(planted: str, redis_client: redis.Redis) -> None:
    TenantRegistry(redis_client, prefix=PREFIX).add(Tenant("alpha", skillbooks=("support",)))
    _, secret = ApiKeys(redis_client, prefix=PREFIX).create("alpha", "review")

    code, output = run("forget", "--subject", "metadata.user_id=u1", "--api-key", secret)

    assert code == 4, output
    assert "needs role admin" in said(output)
    assert places_holding(redis_client, MARKER) != []
