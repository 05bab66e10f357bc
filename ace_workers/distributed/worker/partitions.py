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
import time
from collections.abc import Iterable

import redis
from celery import Celery

from ..settings import WorkerSettings
from ..store.keys import write_partitions_key
from ..store.replies import decode_int
from .errors import WritePartitionsChanged
from .health import queue_depths

__all__ = ["check_partition_count", "queue_consumers", "recorded_partitions"]

logger = logging.getLogger(__name__)


def recorded_partitions(client: redis.Redis, settings: WorkerSettings) -> int | None:
    """The partition count the fleet's workers recorded, or None before any worker ran."""
    raw = client.get(write_partitions_key(settings.queue_prefix))
    return decode_int(raw) if raw is not None else None


def check_partition_count(
    app: Celery, client: redis.Redis, settings: WorkerSettings, *, writer: bool = True
) -> None:
    """A writer records ``settings.write_partitions`` as the fleet's, or is refused a change while
    messages wait; any other worker must run with the recorded count (it routes later epochs and
    re-sends too).

    Raises:
        WritePartitionsChanged: the count differs from the recorded one and, for a writer, a queue
            of the recorded layout (execute, learn or a write queue) holds messages.
    """
    recorded = recorded_partitions(client, settings)
    wanted = settings.write_partitions
    if not writer:
        if recorded is not None and recorded != wanted:
            raise WritePartitionsChanged(recorded, wanted, {})
        return
    if recorded is not None and recorded != wanted:
        previous = dataclasses.replace(settings, write_partitions=recorded)
        waiting = {queue: count for queue, count in queue_depths(app, previous.all_queues()).items() if count}
        if waiting:
            raise WritePartitionsChanged(recorded, wanted, waiting)
        logger.warning("write partitions: %d -> %d (every queue was empty)", recorded, wanted)
    client.set(write_partitions_key(settings.queue_prefix), wanted)


def queue_consumers(app: Celery, wanted: Iterable[str], timeout: float) -> dict[str, list[str]]:
    """The workers consuming each queue, by queue name (a queue nobody serves is absent).

    A broadcast cannot know how many workers will answer, so one ``inspect`` always waits its
    whole timeout. This one asks in short rounds (0.1 s, then doubling) and stops once each
    ``wanted`` queue has a consumer: a command checking a live fleet answers in a fraction of
    a second, and waits ``timeout`` (ACE_WORKER_REPLY_SECONDS) only when some queue really has
    no worker.
    """
    wanted = set(wanted)
    deadline = time.monotonic() + timeout
    wait = 0.1 if wanted else timeout
    consumers: dict[str, set[str]] = {}
    while True:
        remaining = deadline - time.monotonic()
        replies = app.control.inspect(timeout=max(0.01, min(wait, remaining))).active_queues() or {}
        for worker, queues in replies.items():
            for queue in queues:
                consumers.setdefault(queue["name"], set()).add(worker)
        if wanted <= consumers.keys() or time.monotonic() >= deadline:
            return {queue: sorted(workers) for queue, workers in consumers.items()}
        wait *= 2
