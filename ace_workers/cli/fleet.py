"""The fleet's state for a command: a :class:`~ace_workers.operations.FleetClient` on the shared Redis.

The commands that read or change state (status, skillbook, tenant, key, dead-letters list) open
one of these, never the Celery service: one Redis connection, the schema checked, nothing else.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from ..distributed.ops.embedded_redis import resolve_redis
from ..operations import FleetClient, open_fleet
from .options import redis_settings

__all__ = ["open_command_fleet"]


@contextmanager
def open_command_fleet(command: str, why: str) -> Iterator[FleetClient]:
    """A FleetClient on the Redis the settings name for ``command`` (``why`` it needs a shared one).

    Neither ACE_REDIS_URL nor a kept embedded Redis: MissingSettingError naming ``command``.
    """
    settings = redis_settings(command, why)
    with resolve_redis(settings) as (_broker_url, redis_url), open_fleet(settings, redis_url) as fleet:
        yield fleet
