"""What a command over an operation shares: the fleet it opens, who it acts as, and how a refusal ends it.

A command opens a :class:`~ace_workers.operations.FleetClient` (one Redis connection: no
Celery app, no worker runtime), calls one operation as the principal ``--api-key`` or
``--actor`` names, and renders the result. An error the operations' table names ends the
command as one ``error:`` line with that row's exit code (2 not found, 4 refused); a bug
(no row) is left to main().
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import typer

from ..distributed.ops.embedded_redis import resolve_redis
from ..errors import AceError
from ..operations import FleetClient, Principal, open_fleet
from ..operations.outcomes import UNEXPECTED, outcome_of
from .access import principal_of
from .common import printable, redis_settings

__all__ = ["answered", "acting_fleet"]


@contextmanager
def answered() -> Iterator[None]:
    """End the command as ``outcome_of`` answers a refusal raised in the block: one line, its exit code."""
    try:
        yield
    except AceError as exc:
        outcome = outcome_of(exc)
        if outcome is UNEXPECTED:
            raise
        typer.echo(f"error: {printable(exc)}", err=True)
        raise typer.Exit(outcome.exit_code) from None


@contextmanager
def acting_fleet(
    command: str, why: str, api_key: str | None, actor: str | None = None
) -> Iterator[tuple[FleetClient, Principal]]:
    """The fleet's client on the shared Redis the settings name, and who acts (the key, else ``actor``).

    Refusals raised in the block are answered (see :func:`answered`).
    """
    settings = redis_settings(command, why)
    with answered(), resolve_redis(settings) as (_, redis_url), open_fleet(settings, redis_url) as fleet:
        yield fleet, principal_of(fleet, api_key, actor)
