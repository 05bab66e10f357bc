"""``ace-workers migrate``: upgrade the data in Redis to the schema this ace-workers knows."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from ..extras import PROJECT_VERSION
from .options import redis_settings
from .output import console, err_console

if TYPE_CHECKING:
    from ..distributed.ops.migration import MigrationRun

__all__ = ["migrate_command"]


def migrate_command(
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Say what each pending migration would change; change nothing.")
    ] = False,
) -> None:
    """Upgrade the data in Redis to this version's schema, in place (resumable; see docs/upgrades.md)."""
    # The migrations and the runtime they run on load when a migration runs, not for --help.
    from ..distributed.ops.embedded_redis import resolve_redis
    from ..distributed.ops.migration import PROGRESS_EVERY, migrate
    from ..distributed.worker.runtime import WorkerRuntime

    settings = redis_settings("migrate", "it upgrades the data kept in that Redis")
    with resolve_redis(settings) as (_, redis_url):
        # Unchecked: the check would refuse the very data this upgrades.
        runtime = WorkerRuntime(settings, redis_url, schema_checked=False)
        try:
            run = migrate(runtime, dry_run=dry_run, say=_progress, progress_every=PROGRESS_EVERY)
        finally:
            runtime.close()
    _report(run)


def _progress(line: str) -> None:
    err_console.print(line, markup=False)


def _report(run: MigrationRun) -> None:
    from ..distributed.ops.migration import describe_changes

    found = run.found
    by = f", written by ace-workers {found.written_by}" if found.stamped else " (unversioned)"
    shown = "empty" if found.is_new else f"schema {found.version}{by}"
    console.print(
        f"Redis at {run.where}: {shown}; this ace-workers {PROJECT_VERSION} knows schema {run.target}",
        markup=False,
    )
    if run.stamped_new:
        console.print(f"no data yet: stamped schema {run.target}", markup=False)
        return
    if not run.steps:
        console.print("nothing to migrate", markup=False)
        return
    for step in run.steps:
        fleet = "the fleet may run" if step.fleet_may_run else "needs the fleet stopped"
        verb = "would change" if run.dry_run else "changed"
        said = describe_changes(step.changes)
        console.print(f"migration {step.number} ({fleet}): {step.description}; {verb}: {said}", markup=False)
    if run.dry_run:
        console.print(
            f"dry run: nothing changed; 'ace-workers migrate' would bring the schema from "
            f"{found.version} to {run.target}",
            markup=False,
        )
    else:
        console.print(f"done: schema {run.target}", markup=False)
