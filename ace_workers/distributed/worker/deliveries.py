"""A message a worker took from a full Redis is held until Redis has room to record it, never dropped.

kombu's Redis transport takes a message with BRPOP, then records it as unacknowledged
(a MULTI of ZADD and HSET). When Redis is out of memory (maxmemory, noeviction) that
second write is refused: the message is then in neither place, the worker stops with
"Unrecoverable error", and the sample is lost until the reconciler sends it again
(``ACE_VISIBILITY_TIMEOUT_SECONDS`` later, an hour by default). The refused MULTI wrote
nothing, so writing it again once there is room is safe: that is what this does.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from kombu.transport import redis as kombu_redis

from .app import MAX_MEMORY_WAIT_SECONDS, when_redis_has_room

__all__ = ["hold_deliveries_while_redis_is_full"]

# The first wait before recording a delivery again; it doubles up to MAX_MEMORY_WAIT_SECONDS.
FIRST_WAIT_SECONDS = 0.2


def hold_deliveries_while_redis_is_full() -> None:
    """Make kombu's Redis transport in this process wait for room to record a delivery (idempotent).

    A worker calls it before it consumes. While it waits, the worker takes no other
    message: there would be no room to record that one either.
    """
    append = kombu_redis.QoS.append
    if getattr(append, "holds_while_full", False):
        return
    kombu_redis.QoS.append = _holding(append)  # type: ignore[method-assign]


def _holding(append: Callable[..., Any]) -> Callable[..., Any]:
    def append_when_there_is_room(qos: Any, message: Any, delivery_tag: str) -> Any:
        return when_redis_has_room(
            lambda: append(qos, message, delivery_tag), _pause, f"message {delivery_tag}, taken and held,"
        )

    append_when_there_is_room.holds_while_full = True  # type: ignore[attr-defined]
    return append_when_there_is_room


def _pause(refusals: int) -> None:
    # Doubling from FIRST_WAIT_SECONDS (the exponent capped: the wait is capped long before).
    time.sleep(min(FIRST_WAIT_SECONDS * 2.0 ** min(refusals - 1, 16), MAX_MEMORY_WAIT_SECONDS))
