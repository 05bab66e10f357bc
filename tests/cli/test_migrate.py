"""``ace-workers migrate`` on what a fleet of commit f150b23 (unversioned, schema 0) left in Redis.

The fixture (tests/fixtures/schema0) holds a finished batch, a skillbook with its change log and
a label, a skillbook under review with pending proposals, a tenant, an API key and a dead letter.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
import redis

from ace_workers.cli.exit_codes import EXIT_USAGE
from ace_workers.distributed.store.keys import SkillbookKeys, recent_batches_key
from ace_workers.distributed.store.schema import SCHEMA_VERSION, read_schema
from ace_workers.distributed.store.transactions import META_ACTIVE_SKILLS
from ace_workers.sim import make_tasks
from tests.support.cli import Ran, run_console_script
from tests.support.schema0 import FIXTURE_PREFIX, load_schema0, snapshot_keys
from tests.support.workers import running_service

Ace = Callable[..., Ran]


@pytest.fixture
def schema0(clean_env: pytest.MonkeyPatch, redis_url: str, redis_client: redis.Redis) -> redis.Redis:
    """The fixture loaded into the test Redis, the CLI pointed at it (prefix ``ace``)."""
    load_schema0(redis_client)
    clean_env.setenv("ACE_REDIS_URL", redis_url)
    clean_env.setenv("ACE_QUEUE_PREFIX", FIXTURE_PREFIX)
    return redis_client


@pytest.fixture
def ace(clean_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Ace:
    return lambda *args: run_console_script(clean_env, capsys, *args)


@pytest.mark.parametrize(
    "args", [("skillbook", "show", "support"), ("worker", "--queues", "write", "--concurrency", "1")]
)
def test_the_cli_and_a_worker_refuse_unversioned_data_naming_migrate(
    schema0: redis.Redis, ace: Ace, args: tuple[str, ...]
) -> None:
    ran = ace(*args)
    assert (ran.code, ran.err.count("\n")) == (EXIT_USAGE, 1), ran
    assert "holds data of schema 0 (unversioned)" in ran.err
    assert "run 'ace-workers migrate'" in ran.err


def test_a_dry_run_says_what_would_change_and_changes_no_key(schema0: redis.Redis, ace: Ace) -> None:
    before = snapshot_keys(schema0)
    ran = ace("migrate", "--dry-run")
    assert ran.code == 0, ran
    # The skillbook under review was written (policy, proposals) but never counted its skills.
    assert "would change: skillbooks given their active-skill count: 1" in ran.out
    # Its queue holds three proposals, two of them the same idea (zorb), stored without merge keys.
    assert (
        "would change: pending proposals given their merge key: 2; "
        "identical pending proposals merged into the first: 1"
    ) in ran.out
    assert "dry run: nothing changed" in ran.out
    assert snapshot_keys(schema0) == before


def test_migrate_upgrades_in_place_and_a_second_run_changes_nothing(schema0: redis.Redis, ace: Ace) -> None:
    first = ace("migrate")
    assert first.code == 0, first
    assert "changed: skillbooks given their active-skill count: 1" in first.out
    assert schema0.hget(SkillbookKeys("reviewed", FIXTURE_PREFIX).meta, META_ACTIVE_SKILLS) == b"0"
    assert read_schema(schema0, FIXTURE_PREFIX).version == SCHEMA_VERSION
    after_first = snapshot_keys(schema0)
    second = ace("migrate")
    assert (second.code, "nothing to migrate" in second.out) == (0, True), second
    assert snapshot_keys(schema0) == after_first


def test_migrated_data_is_read_and_learned_on(schema0: redis.Redis, ace: Ace, redis_url: str) -> None:
    assert ace("migrate").code == 0
    shown = ace("skillbook", "show", "support")
    assert shown.code == 0, shown
    assert "2 of 100000 active skills" in shown.out  # as the fixture's batch left it
    batch_id = schema0.zrange(recent_batches_key(FIXTURE_PREFIX), -1, -1)[0].decode()
    status = ace("status", batch_id)
    # Read: the fixture's newest batch is one whose every sample failed, so status says so (exit 1).
    assert status.code == 1, status
    assert f"batch {batch_id} on 'failing' (ace): failed, 0 done, 1 failed" in status.out
    assert ace("skillbook", "label", "list", "support").code == 0
    version_before = int(schema0.get(SkillbookKeys("support", FIXTURE_PREFIX).version) or 0)
    with running_service(redis_url, queue_prefix=FIXTURE_PREFIX, learn_threads=2) as service:
        handle = service.producer.enqueue_samples(make_tasks(4, seed=9, topics=2), "support")
        finished = handle.wait(timeout=120)
    assert finished.done == 4
    assert int(schema0.get(SkillbookKeys("support", FIXTURE_PREFIX).version) or 0) > version_before


def test_migrate_leaves_one_pending_proposal_per_idea_of_the_fixtures_queue(
    schema0: redis.Redis, ace: Ace
) -> None:
    assert ace("migrate").code == 0
    listed = ace("skillbook", "review", "list", "reviewed", "--json")
    assert listed.code == 0, listed
    pending = {row["id"]: row for row in json.loads(listed.out)["proposals"]}
    # p-28ee9eb7216d and p-cd2a2d954133 proposed the same zorb skill; the older one keeps it.
    assert sorted(pending) == ["p-28ee9eb7216d", "p-430274e3dd8f"]
    assert (pending["p-28ee9eb7216d"]["count"], pending["p-430274e3dd8f"]["count"]) == (2, 1)
    merged = ace("skillbook", "review", "show", "reviewed", "p-cd2a2d954133", "--json")
    decided = json.loads(merged.out)
    assert (decided["status"], decided["decision"]["actor"]) == ("rejected", "migrate")
    assert decided["decision"]["note"] == (
        "merged into p-28ee9eb7216d by migration 2: it proposed the same operations"
    )
