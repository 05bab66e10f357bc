"""Run the pending migrations of the data under one prefix, or say what they would change.

One run at a time (a lock that expires if its holder dies, kept while it works); a migration
that needs the fleet stopped refuses while a worker's fleet record is fresh. The schema stamp
moves after each migration finished, so an interrupted run starts again at the one it was in,
whose units done already are skipped.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import dataclass, field

from redis.exceptions import LockNotOwnedError
from redis.lock import Lock

from ...counts import counted
from ...extras import PROJECT_VERSION
from ..store.errors import MigrationRefusedError, NewerSchemaError
from ..store.keys import schema_lock_key
from ..store.migrations import MIGRATIONS, Changes, Migration
from ..store.schema import SCHEMA_VERSION, SchemaState, read_schema, record_schema
from ..store.worker_records import FRESH_SECONDS, read_worker_records
from ..worker.runtime import WorkerRuntime

__all__ = [
    "LOCK_SECONDS",
    "PROGRESS_EVERY",
    "MigrationRun",
    "MigrationStep",
    "describe_changes",
    "live_workers",
    "migrate",
]

logger = logging.getLogger(__name__)

# The lock's lease: renewed with every progress line, so a run killed midway frees it this soon.
LOCK_SECONDS = 60.0
# A progress line per this many units (skillbooks, keys) of one migration.
PROGRESS_EVERY = 100


@dataclass
class MigrationStep:
    """One migration of a run: what it would change (dry run) or changed."""

    number: int
    description: str
    fleet_may_run: bool
    changes: Changes


@dataclass
class MigrationRun:
    """What a run of ``migrate`` found and did."""

    where: str
    found: SchemaState
    target: int = SCHEMA_VERSION
    dry_run: bool = False
    stamped_new: bool = False  # an empty Redis, stamped with the current schema
    steps: list[MigrationStep] = field(default_factory=list)


def live_workers(runtime: WorkerRuntime, now: float | None = None) -> list[str]:
    """The node names of the workers whose fleet record is fresh (they refresh it while they run)."""
    now = time.time() if now is None else now
    return [
        node
        for node, record in read_worker_records(runtime.redis, runtime.settings.queue_prefix).items()
        if isinstance(record.get("at"), (int, float)) and now - record["at"] <= FRESH_SECONDS
    ]


def migrate(
    runtime: WorkerRuntime,
    *,
    dry_run: bool = False,
    say: Callable[[str], None] = logger.info,
    migrations: Sequence[Migration] = MIGRATIONS,
    progress_every: int = PROGRESS_EVERY,
) -> MigrationRun:
    """Bring the data of ``runtime``'s Redis to :data:`SCHEMA_VERSION` (``dry_run``: only plan it).

    ``runtime`` is built without its schema check (it would refuse the data this upgrades).

    Raises:
        NewerSchemaError: the data is newer than this code: upgrade ace-workers instead.
        MigrationRefusedError: another migrate holds the lock, or a migration that needs the
            fleet stopped meets running workers; nothing was changed.
    """
    client, prefix, where = runtime.redis, runtime.settings.queue_prefix, runtime.where
    state = read_schema(client, prefix)
    if state.version > SCHEMA_VERSION:
        raise NewerSchemaError(where, state.version, SCHEMA_VERSION, PROJECT_VERSION)
    run = MigrationRun(where, state, dry_run=dry_run)
    pending = [m for m in migrations if m.number > state.version]
    if dry_run or state.is_new:
        run.steps = [_step(m, m.plan(client, prefix)) for m in pending]
        if state.is_new and not dry_run:  # nothing to upgrade: the first process would stamp it
            record_schema(client, prefix, SCHEMA_VERSION)
            run.stamped_new, run.steps = True, []
        return run
    lock = Lock(client, schema_lock_key(prefix), timeout=LOCK_SECONDS)
    if not lock.acquire(blocking=False):
        raise MigrationRefusedError(
            f"another 'ace-workers migrate' is running on {where} (lock {schema_lock_key(prefix)}, "
            f"which expires {LOCK_SECONDS:.0f} s after its holder stops): wait for it, then run it again"
        )
    try:
        # Read again under the lock: a run that held it before may have finished the work.
        state = read_schema(client, prefix)
        pending = [m for m in migrations if m.number > state.version]
        _refuse_running_fleet(runtime, pending, where)
        for migration in pending:
            run.steps.append(_apply(migration, runtime, lock, say, progress_every))
    finally:
        with suppress(LockNotOwnedError):  # it expired: it may be another run's now
            lock.release()
    return run


def _step(migration: Migration, changes: Changes) -> MigrationStep:
    return MigrationStep(migration.number, migration.description, migration.fleet_may_run, changes)


def _refuse_running_fleet(runtime: WorkerRuntime, pending: Sequence[Migration], where: str) -> None:
    stopped = [m.number for m in pending if not m.fleet_may_run]
    if not stopped:
        return
    alive = live_workers(runtime)
    if alive:
        shown = ", ".join(alive[:5]) + (f" and {len(alive) - 5} more" if len(alive) > 5 else "")
        raise MigrationRefusedError(
            f"migration {stopped[0]} needs the fleet stopped, but {counted(len(alive), 'worker')} on {where} "
            f"{'is' if len(alive) == 1 else 'are'} running ({shown}): "
            f"stop them (their records go stale {FRESH_SECONDS:.0f} s after "
            "they stop), then run 'ace-workers migrate' again"
        )


def _apply(
    migration: Migration, runtime: WorkerRuntime, lock: Lock, say: Callable[[str], None], every: int
) -> MigrationStep:
    """Apply one migration, then move the stamp to its number."""
    client, prefix = runtime.redis, runtime.settings.queue_prefix
    say(f"migration {migration.number}: {migration.description}")

    def progress(done: int) -> None:
        if done % every == 0:
            lock.reacquire()  # still ours: a run that outlives the lease would let a second one in
            say(f"migration {migration.number}: {done} done")

    changes = migration.apply(client, prefix, progress)
    record_schema(client, prefix, migration.number, migrated=True)
    say(f"migration {migration.number}: done ({describe_changes(changes)}); schema is {migration.number}")
    return _step(migration, changes)


def describe_changes(changes: Changes) -> str:
    """``changes`` in words: "skillbooks given their count: 3", or "nothing to change".

    The count follows its phrase, so one of anything reads right ("...: 1", never "1 skillbooks").
    """
    return "; ".join(f"{what}: {count}" for what, count in changes.items()) or "nothing to change"
