"""The fleet's state for a command: a :class:`~ace_workers.operations.FleetClient` on the shared Redis.

The commands that read or change state (status, skillbook, review, label, lifecycle, tenant, key,
dead-letters list) open one of these, never the Celery service: one Redis connection, the schema
checked, nothing else; they call an operation as the principal ``--api-key`` or ``--actor`` names.
A refusal the operation raises ends the command in main's RootGroup (one line, its exit code).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from .access import principal_of
from .options import redis_settings

if TYPE_CHECKING:
    from ..operations import FleetClient, Principal

__all__ = ["acting_fleet", "open_command_fleet"]


@contextmanager
def open_command_fleet(command: str, why: str) -> Iterator[FleetClient]:
    """A FleetClient on the Redis the settings name for ``command`` (``why`` it needs a shared one).

    Neither ACE_REDIS_URL nor a kept embedded Redis: MissingSettingError naming ``command``.
    """
    # The Redis client and the operations load when a command runs: --help lists commands without them.
    from ..distributed.ops.embedded_redis import resolve_redis
    from ..operations import open_fleet

    settings = redis_settings(command, why)
    with resolve_redis(settings) as (_broker_url, redis_url), open_fleet(settings, redis_url) as fleet:
        yield fleet


@contextmanager
def acting_fleet(
    command: str, why: str, api_key: str | None, actor: str | None = None
) -> Iterator[tuple[FleetClient, Principal]]:
    """:func:`open_command_fleet`, and who acts: the key (``--api-key``, ACE_API_KEY), else ``actor``."""
    with open_command_fleet(command, why) as fleet:
        yield fleet, principal_of(fleet, api_key, actor)
