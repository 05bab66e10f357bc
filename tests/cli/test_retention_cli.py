"""`retention show` lists each kind with its setting; `retention sweep` trims, `--dry-run` counts."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
import redis

from ace_workers.distributed.store.keys import console_audit_key, dead_letters_key
from ace_workers.distributed.tenancy import ApiKeys, Tenant, TenantRegistry
from tests.support.cli import invoke_raw as run
from tests.support.cli import said

PREFIX = "cliretention"


@pytest.fixture
def cli_settings() -> dict[str, str]:
    """``env`` under this module's prefix, audit kept 30 days and evaluations all."""
    return {
        "ACE_QUEUE_PREFIX": PREFIX,
        "ACE_RETENTION_AUDIT_DAYS": "30",
        "ACE_RETENTION_EVALUATIONS": "0",
    }


def test_show_lists_each_kind_its_setting_value_and_enforcer(env: pytest.MonkeyPatch) -> None:
    code, output = run("retention", "show", "--json")

    assert code == 0, output
    rows = {row["kind"]: row for row in json.loads(output)}
    assert list(rows) == [
        "batch_records",
        "dead_letters",
        "decided_proposals",
        "audit",
        "label_log",
        "evaluations",
        "erasures",
    ]
    assert rows["audit"]["setting"] == "ACE_RETENTION_AUDIT_DAYS"
    assert rows["audit"]["value"] == 30
    assert rows["audit"]["kept"] == "30 days after the console action"
    assert rows["evaluations"]["kept"] == "all"
    assert rows["decided_proposals"]["value"] == 90
    assert rows["batch_records"]["setting"] == "ACE_RESULT_TTL_SECONDS"
    assert rows["dead_letters"]["enforced_by"] == "nightly sweep"
    assert rows["evaluations"]["enforced_by"] == "each evaluation, nightly sweep"


def test_show_prints_a_table_row_per_kind(env: pytest.MonkeyPatch) -> None:
    code, output = run("retention", "show")

    assert code == 0, output
    line = next(line for line in output.splitlines() if "ACE_RETENTION_LABEL_MOVES" in line)
    assert said(line).split()[:4] == ["label_log", "ACE_RETENTION_LABEL_MOVES", "1000", "the"]


def test_a_tenant_admin_may_not_read_or_sweep(env: pytest.MonkeyPatch, redis_client: redis.Redis) -> None:
    TenantRegistry(redis_client, prefix=PREFIX).add(Tenant("alpha", prefixes=("alpha-",)))
    _, secret = ApiKeys(redis_client, prefix=PREFIX).create("alpha", "admin")

    for command in ("show", "sweep"):
        code, output = run("retention", command, "--api-key", secret)
        assert code == 4, output
        assert "fleet" in said(output)


def old_records(client: redis.Redis) -> None:
    """One dead letter parked 40 days ago and one audit entry 31 days old."""
    parked = (datetime.now(UTC) - timedelta(days=40)).isoformat()
    client.rpush(dead_letters_key(PREFIX), json.dumps({"kwargs": {}, "parked_at": parked}))
    stamp = int((datetime.now(UTC) - timedelta(days=31)).timestamp() * 1000)
    client.xadd(console_audit_key(PREFIX), {"entry": "{}"}, id=f"{stamp}-0")


def test_sweep_dry_run_counts_and_removes_nothing(env: pytest.MonkeyPatch, redis_client: redis.Redis) -> None:
    old_records(redis_client)

    code, output = run("retention", "sweep", "--dry-run")

    assert code == 0, output
    assert "dead_letters: 1 dead letter would be removed" in output.splitlines()
    assert "audit: 1 audit entry would be removed" in output.splitlines()
    assert redis_client.llen(dead_letters_key(PREFIX)) == 1
    assert redis_client.xlen(console_audit_key(PREFIX)) == 1


def test_sweep_removes_what_is_past_its_bound(env: pytest.MonkeyPatch, redis_client: redis.Redis) -> None:
    old_records(redis_client)

    code, output = run("retention", "sweep", "--json")

    assert code == 0, output
    assert json.loads(output) == {
        "dry_run": False,
        "removed": {
            "dead_letters": 1,
            "decided_proposals": 0,
            "audit": 1,
            "label_log": 0,
            "evaluations": 0,
            "erasures": 0,
        },
    }
    assert redis_client.llen(dead_letters_key(PREFIX)) == 0
    assert redis_client.xlen(console_audit_key(PREFIX)) == 0


def test_a_negative_setting_is_refused_in_one_line_naming_it(env: pytest.MonkeyPatch) -> None:
    env.setenv("ACE_RETENTION_PROPOSAL_DAYS", "-1")

    code, output = run("retention", "show")

    assert code == 2
    assert said(output) == "error: ACE_RETENTION_PROPOSAL_DAYS=-1.0: must be at least 0"
