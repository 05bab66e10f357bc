"""A message a worker took from a full Redis is held until Redis has room to record it, never dropped.

kombu's Redis transport takes a message with BRPOP, then records it as unacknowledged
(a MULTI of ZADD and HSET). When Redis is out of memory (maxmemory, noeviction) that
second write is refused: the message is then in neither place, the worker stops with
"Unrecoverable error", and the sample is lost until the reconciler sends it again
(``ACE_VISIBILITY_TIMEOUT_SECONDS`` later, an hour by default). The refused MULTI wrote
nothing, so writing it again once there is room is safe: that is what this does, for the
transport's hook that celery_worker.py installs.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from .redis_health import MAX_MEMORY_WAIT_SECONDS, when_redis_has_room

__all__ = ["FIRST_WAIT_SECONDS", "record_delivery_when_there_is_room"]

# The first wait before recording a delivery again; it doubles up to MAX_MEMORY_WAIT_SECONDS.
FIRST_WAIT_SECONDS = 0.2

T = TypeVar("T")


def record_delivery_when_there_is_room(record: Callable[[], T], delivery_tag: str) -> T:
    """``record()`` (the transport's write of a taken message), again after a pause while Redis is full.

    While it waits, the worker takes no other message: there would be no room to record that one either.
    """
    return when_redis_has_room(record, _pause, f"message {delivery_tag}, taken and held,")


def _pause(refusals: int) -> None:
    # Doubling from FIRST_WAIT_SECONDS (the exponent capped: the wait is capped long before).
    time.sleep(min(FIRST_WAIT_SECONDS * 2.0 ** min(refusals - 1, 16), MAX_MEMORY_WAIT_SECONDS))
