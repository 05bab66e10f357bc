"""Schema versions on real Redis: a new Redis is stamped; other schemas are refused; migrate upgrades.

Every process refuses data of another schema before it starts (a worker, the console, the MCP
server, a CLI command, a Python Producer), in one line naming both schemas and what to do, with
exit code 2; ``migrate`` plans, applies, resumes and repeats without harm.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
import redis

from ace_workers import __version__
from ace_workers.cli.exit_codes import EXIT_REFUSED, EXIT_USAGE
from ace_workers.core import Skillbook
from ace_workers.distributed import Producer
from ace_workers.distributed.ops.migration import migrate
from ace_workers.distributed.settings import WorkerSettings
from ace_workers.distributed.store.errors import MigrationRefusedError, NewerSchemaError
from ace_workers.distributed.store.keys import SkillbookKeys, lasting_state_keys, schema_key, schema_lock_key
from ace_workers.distributed.store.migrations import MIGRATIONS, Changes, Progress
from ace_workers.distributed.store.schema import SCHEMA_VERSION, read_schema
from ace_workers.distributed.store.store import RedisSkillbookStore
from ace_workers.distributed.store.transactions import META_ACTIVE_SKILLS
from ace_workers.distributed.worker.fleet import publish_worker
from ace_workers.distributed.worker.runtime import WorkerRuntime
from tests.support.cli import Ran, run_console_script
from tests.support.schema0 import stamp_current_schema
from tests.support.workers import build_test_service

PREFIX = "schemav"
NEWER = SCHEMA_VERSION + 2


@pytest.fixture
def cli_settings() -> dict[str, str]:
    """``env`` (tests/support/cli_env.py) under this module's prefix."""
    return {"ACE_QUEUE_PREFIX": PREFIX}


@pytest.fixture
def cli_stamped() -> bool:
    """Unstamped: these tests write the schema stamp, or its absence, themselves."""
    return False


Ace = Callable[..., Ran]


@pytest.fixture
def ace(env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Ace:
    return lambda *args: run_console_script(env, capsys, *args)


def write_skillbooks(client: redis.Redis, names: list[str], prefix: str = PREFIX) -> None:
    """Skillbooks of two skills each, written by the store directly (no stamp: unversioned data)."""
    for name in names:
        book = Skillbook()
        book.add_skill("general", f"Check units ({name}).")
        book.add_skill("general", f"Show the work ({name}).")
        RedisSkillbookStore(client, name, prefix=prefix).import_skillbook(book)


def runtime_of(redis_url: str, *, checked: bool = False) -> WorkerRuntime:
    return WorkerRuntime(WorkerSettings(queue_prefix=PREFIX), redis_url, schema_checked=checked)


# -- a new Redis ---------------------------------------------------------------------------


def test_a_new_redis_is_stamped_with_the_schema_and_the_version_by_the_first_process(
    redis_client: redis.Redis, redis_url: str
) -> None:
    service = build_test_service(redis_url)
    service.close()
    stamp = redis_client.hgetall(schema_key(service.runtime.settings.queue_prefix))
    assert (stamp[b"version"], stamp[b"written_by"]) == (str(SCHEMA_VERSION).encode(), __version__.encode())


def command_counts(client: redis.Redis) -> dict[str, int]:
    """Calls per command Redis counted so far (connection set-up and INFO itself left out)."""
    stats = client.info("commandstats")
    skipped = ("cmdstat_info", "cmdstat_client|setinfo", "cmdstat_hello", "cmdstat_select")
    return {name: value["calls"] for name, value in stats.items() if name not in skipped}


def test_a_stamped_redis_is_checked_with_one_pipeline_of_reads(
    redis_client: redis.Redis, redis_url: str
) -> None:
    stamp_current_schema(redis_client, PREFIX)
    before = command_counts(redis_client)
    runtime_of(redis_url, checked=True).close()
    after = command_counts(redis_client)
    sent = {name: calls - before.get(name, 0) for name, calls in after.items() if calls != before.get(name)}
    assert sent == {"cmdstat_hgetall": 1, "cmdstat_exists": len(lasting_state_keys(PREFIX))}


# -- refusals ------------------------------------------------------------------------------


@pytest.fixture
def newer(redis_client: redis.Redis) -> redis.Redis:
    write_skillbooks(redis_client, ["book"])
    redis_client.hset(schema_key(PREFIX), mapping={"version": NEWER, "written_by": "9.9.9"})
    return redis_client


NEWER_LINE = f"holds data of schema {NEWER}; this ace-workers {__version__} knows schema {SCHEMA_VERSION}"


@pytest.mark.parametrize(
    "args",
    [
        ("worker", "--queues", "learn"),
        ("console", "--no-auth"),
        ("mcp", "--backend", "fleet"),
        ("skillbook", "list"),
        ("skillbook", "show", "book"),
    ],
    ids=["worker", "console", "mcp", "skillbook-list", "skillbook-show"],
)
def test_newer_data_is_refused_in_one_line_naming_both_schemas(
    ace: Ace, newer: redis.Redis, args: tuple[str, ...]
) -> None:
    ran = ace(*args)
    assert (ran.code, ran.err.count("\n")) == (EXIT_USAGE, 1), ran
    assert NEWER_LINE in ran.err
    assert ran.err.rstrip().endswith("upgrade ace-workers")


def test_a_python_producer_refuses_newer_data(newer: redis.Redis, redis_url: str) -> None:
    with pytest.raises(NewerSchemaError) as refused:
        Producer(WorkerSettings(redis_url=redis_url, queue_prefix=PREFIX))
    assert (refused.value.found, refused.value.known) == (NEWER, SCHEMA_VERSION)


def test_unversioned_data_is_refused_naming_migrate(ace: Ace, redis_client: redis.Redis) -> None:
    write_skillbooks(redis_client, ["book"])
    ran = ace("skillbook", "show", "book")
    assert ran.code == EXIT_USAGE, ran
    assert f"holds data of schema 0 (unversioned); this ace-workers {__version__} knows schema" in ran.err
    assert "run 'ace-workers migrate'" in ran.err


def test_unversioned_data_is_refused_by_a_worker_naming_migrate(ace: Ace, redis_client: redis.Redis) -> None:
    write_skillbooks(redis_client, ["book"])
    ran = ace("worker", "--queues", "learn")
    assert ran.code == EXIT_USAGE, ran
    assert "run 'ace-workers migrate'" in ran.err


def test_a_refused_process_leaves_the_data_as_it_was(ace: Ace, redis_client: redis.Redis) -> None:
    write_skillbooks(redis_client, ["book"])
    before = sorted(redis_client.scan_iter())
    ace("skillbook", "list")
    assert sorted(redis_client.scan_iter()) == before


# -- migrate -------------------------------------------------------------------------------


def drop_counts(client: redis.Redis, names: list[str]) -> None:
    """Make skillbooks as a store before the active-skill count left them."""
    for name in names:
        client.hdel(SkillbookKeys(name, PREFIX).meta, META_ACTIVE_SKILLS)


def counts(client: redis.Redis, names: list[str]) -> list[bytes | None]:
    return [client.hget(SkillbookKeys(name, PREFIX).meta, META_ACTIVE_SKILLS) for name in names]


NAMES = ["a", "b", "c", "d", "e"]


def test_migrate_dry_run_counts_and_changes_nothing(ace: Ace, redis_client: redis.Redis) -> None:
    write_skillbooks(redis_client, NAMES)
    drop_counts(redis_client, NAMES[:3])
    before = {key: redis_client.dump(key) for key in redis_client.scan_iter()}
    ran = ace("migrate", "--dry-run")
    assert ran.code == 0, ran
    assert "would change: skillbooks given their active-skill count: 3" in ran.out
    assert {key: redis_client.dump(key) for key in redis_client.scan_iter()} == before


def test_migrate_stores_the_counts_stamps_and_a_second_run_does_nothing(
    ace: Ace, redis_client: redis.Redis
) -> None:
    write_skillbooks(redis_client, NAMES)
    drop_counts(redis_client, NAMES[:3])
    first = ace("migrate")
    assert first.code == 0, first
    assert "changed: skillbooks given their active-skill count: 3" in first.out
    assert counts(redis_client, NAMES) == [b"2"] * 5
    assert read_schema(redis_client, PREFIX).version == SCHEMA_VERSION
    second = ace("migrate")
    assert (second.code, "nothing to migrate" in second.out) == (0, True), second
    assert ace("skillbook", "show", "a").code == 0


def test_migrate_interrupted_stamps_nothing_and_a_second_run_finishes(
    redis_client: redis.Redis, redis_url: str
) -> None:
    write_skillbooks(redis_client, NAMES)
    drop_counts(redis_client, NAMES)
    runtime = runtime_of(redis_url)

    class Interrupted(Exception):
        pass

    said: list[str] = []

    def interrupt_after_two(done: int) -> None:
        if done == 2:
            raise Interrupted

    class Interrupting:
        """Migration 1, stopped after its second skillbook as a killed run would be."""

        number, description, fleet_may_run = 1, MIGRATIONS[0].description, True

        def plan(self, client: redis.Redis, prefix: str) -> Changes:
            return MIGRATIONS[0].plan(client, prefix)

        def apply(self, client: redis.Redis, prefix: str, progress: Progress) -> Changes:
            return MIGRATIONS[0].apply(client, prefix, interrupt_after_two)

    with pytest.raises(Interrupted):
        migrate(runtime, migrations=[Interrupting()], say=said.append)
    assert counts(redis_client, NAMES) == [b"2", b"2", None, None, None]
    assert read_schema(redis_client, PREFIX).stamped is False
    assert redis_client.exists(schema_lock_key(PREFIX)) == 0  # the lock went with the run
    run = migrate(runtime, say=said.append, progress_every=1)
    assert run.steps[0].changes == {"skillbooks given their active-skill count": 3}
    assert counts(redis_client, NAMES) == [b"2"] * 5
    assert read_schema(redis_client, PREFIX).version == SCHEMA_VERSION
    assert "migration 1: 5 done" in said  # a progress line per unit here
    runtime.close()


def test_migrate_refuses_while_another_run_holds_the_lock(redis_client: redis.Redis, redis_url: str) -> None:
    write_skillbooks(redis_client, ["a"])
    redis_client.set(schema_lock_key(PREFIX), "another run", ex=60)
    runtime = runtime_of(redis_url)
    with pytest.raises(MigrationRefusedError, match="another 'ace-workers migrate' is running"):
        migrate(runtime)
    assert read_schema(redis_client, PREFIX).stamped is False
    runtime.close()


class NeedsTheFleetStopped:
    """A migration to a schema after this one's, that may not run beside workers."""

    number, description, fleet_may_run = SCHEMA_VERSION + 1, "rename every key", False

    def __init__(self) -> None:
        self.applied = threading.Event()

    def plan(self, client: redis.Redis, prefix: str) -> Changes:
        return {"keys renamed": 0}

    def apply(self, client: redis.Redis, prefix: str, progress: Progress) -> Changes:
        self.applied.set()
        return {"keys renamed": 0}


def test_a_migration_that_needs_the_fleet_stopped_refuses_while_a_worker_runs(
    redis_client: redis.Redis, redis_url: str
) -> None:
    stamp_current_schema(redis_client, PREFIX)
    runtime = runtime_of(redis_url)
    publish_worker(runtime, "learn@host1")  # a running worker's fresh record
    stopped = NeedsTheFleetStopped()
    with pytest.raises(MigrationRefusedError, match=r"needs the fleet stopped, but 1 worker on") as refused:
        migrate(runtime, migrations=[*MIGRATIONS, stopped])
    assert "learn@host1" in str(refused.value)
    assert not stopped.applied.is_set()
    redis_client.hdel(f"{PREFIX}:fleet:workers", "learn@host1")  # the worker stopped
    migrate(runtime, migrations=[*MIGRATIONS, stopped])
    assert stopped.applied.is_set()
    assert read_schema(redis_client, PREFIX).version == SCHEMA_VERSION + 1
    runtime.close()


def test_migrate_refused_exits_with_the_refusal_code_in_one_line(ace: Ace, redis_client: redis.Redis) -> None:
    write_skillbooks(redis_client, ["a"])
    redis_client.set(schema_lock_key(PREFIX), "another run", ex=60)
    ran = ace("migrate")
    assert (ran.code, ran.err.count("\n")) == (EXIT_REFUSED, 1), ran
    assert "another 'ace-workers migrate' is running" in ran.err


def test_migrate_refuses_newer_data(ace: Ace, newer: redis.Redis) -> None:
    ran = ace("migrate")
    assert ran.code == EXIT_USAGE, ran
    assert NEWER_LINE in ran.err


def test_migrate_of_a_new_redis_stamps_it(ace: Ace, redis_client: redis.Redis) -> None:
    ran = ace("migrate")
    assert (ran.code, "no data yet: stamped schema" in ran.out) == (0, True), ran
    assert read_schema(redis_client, PREFIX).version == SCHEMA_VERSION


def test_the_migrations_lead_one_by_one_to_the_schema() -> None:
    assert [m.number for m in MIGRATIONS] == list(range(1, SCHEMA_VERSION + 1))
