"""``ace-workers backup`` and ``restore``: a logical copy of the fleet's state in a folder, and back."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..counts import counted
from .access import ApiKeyOption, principal_of
from .options import ActorOption, actor_or_fail, redis_settings
from .output import err_console

if TYPE_CHECKING:
    from ..distributed.settings import WorkerSettings

__all__ = ["backup_command", "restore_command"]

WHY = "a backup copies, and a restore fills, the fleet's shared Redis"


def _progress(line: str) -> None:
    err_console.print(line, markup=False)


def backup_command(
    out: Annotated[Path, typer.Option("--out", help="The new folder to write the backup into.")],
    actor: ActorOption = None,
    api_key: ApiKeyOption = None,
) -> None:
    """Copy every skillbook (history, labels, review queue), the tenants and API key hashes into a folder."""
    from ..operations import open_fleet
    from ..operations.backup import backup_fleet

    actor_or_fail(actor)
    with _resolved("backup") as (settings, redis_url), open_fleet(settings, redis_url) as fleet:
        manifest = backup_fleet(fleet, principal_of(fleet, api_key, actor), out, say=_progress)
    counts = manifest["counts"]
    typer.echo(
        f"backup of prefix {manifest['source_prefix']!r} written to {out}: "
        f"{counted(counts['skillbooks'], 'skillbook')}, {counted(counts['tenants'], 'tenant')}, "
        f"{counted(counts['api_keys'], 'API key')} (schema {manifest['schema_version']})"
    )


def restore_command(
    source: Annotated[Path, typer.Option("--from", help="The folder `ace-workers backup` wrote.")],
    merge: Annotated[
        bool,
        typer.Option("--merge", help="Add to a Redis that holds data (refused for a skillbook it has)."),
    ] = False,
    prefix: Annotated[
        str | None,
        typer.Option("--prefix", help="Restore under this key prefix (default: ACE_QUEUE_PREFIX)."),
    ] = None,
    actor: ActorOption = None,
    api_key: ApiKeyOption = None,
) -> None:
    """Load a backup into an empty Redis or Redis Cluster (or, with --merge, one holding data)."""
    from ..distributed.store.keys import validate_key_prefix
    from ..operations import open_fleet
    from ..operations.backup import restore_fleet

    if prefix is not None:
        try:
            validate_key_prefix(prefix)
        except ValueError as exc:
            raise typer.BadParameter(str(exc), param_hint="--prefix") from None
    actor_or_fail(actor)
    with _resolved("restore", prefix) as (settings, redis_url), open_fleet(settings, redis_url) as fleet:
        report = restore_fleet(fleet, principal_of(fleet, api_key, actor), source, merge=merge, say=_progress)
    typer.echo(
        f"restored {counted(len(report.skillbooks), 'skillbook')} from {source} into Redis at "
        f"{report.where} under prefix {report.prefix!r}" + (" (merged)" if merge else "")
    )


@contextmanager
def _resolved(command: str, prefix: str | None = None) -> Iterator[tuple[WorkerSettings, str]]:
    """The settings (under ``prefix`` if given) and the Redis URL ``command`` works on."""
    from ..distributed.ops.embedded_redis import resolve_redis

    settings = redis_settings(command, WHY)
    if prefix is not None:
        settings = dataclasses.replace(settings, queue_prefix=prefix)
    with resolve_redis(settings) as (_broker_url, redis_url):
        yield settings, redis_url
