"""Write partitions: one single-thread writer per ``write.<k>`` queue, and safe changes of their count.

With ``ACE_WRITE_PARTITIONS=N`` a skillbook's write steps go to the queue its name
hashes to (:func:`~..settings.write_partition`), so every skillbook still has
exactly one writer while N writers serve the fleet side by side.

A sample's chain names its queues when it is sent, so messages sent under one count
carry that count's write queues. The count may change only once they are gone:
workers record the count they run with in Redis and refuse to start with another
while any queue of the recorded layout still holds messages.
"""

from __future__ import annotations

import dataclasses
import logging

import redis

from ..settings import WorkerSettings
from ..store.keys import write_partitions_key
from ..store.replies import decode_int
from .dispatch import Dispatcher
from .errors import WritePartitionsChanged

__all__ = ["check_partition_count", "recorded_partitions"]

logger = logging.getLogger(__name__)


def recorded_partitions(client: redis.Redis, settings: WorkerSettings) -> int | None:
    """The partition count the fleet's workers recorded, or None before any worker ran."""
    raw = client.get(write_partitions_key(settings.queue_prefix))
    return decode_int(raw) if raw is not None else None


def check_partition_count(dispatch: Dispatcher, *, writer: bool = True) -> None:
    """A writer records ``settings.write_partitions`` as the fleet's, or is refused a change while
    messages wait; any other worker must run with the recorded count (it routes later epochs and
    re-sends too).

    Raises:
        WritePartitionsChanged: the count differs from the recorded one and, for a writer, a queue
            of the recorded layout (execute, learn or a write queue) holds messages.
    """
    client, settings = dispatch.runtime.redis, dispatch.runtime.settings
    recorded = recorded_partitions(client, settings)
    wanted = settings.write_partitions
    if not writer:
        if recorded is not None and recorded != wanted:
            raise WritePartitionsChanged(recorded, wanted, {})
        return
    if recorded is not None and recorded != wanted:
        previous = dataclasses.replace(settings, write_partitions=recorded)
        waiting = {
            queue: count for queue, count in dispatch.queue_depths(previous.all_queues()).items() if count
        }
        if waiting:
            raise WritePartitionsChanged(recorded, wanted, waiting)
        logger.warning("write partitions: %d -> %d (every queue was empty)", recorded, wanted)
    client.set(write_partitions_key(settings.queue_prefix), wanted)
