"""A lock taken only if free, and released only by its holder."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, suppress

import redis
from redis.exceptions import LockNotOwnedError

__all__ = ["try_lock"]


@contextmanager
def try_lock(client: redis.Redis, key: str, seconds: float) -> Iterator[bool]:
    """Hold ``key`` for at most ``seconds`` if nobody does; yields whether this caller holds it.

    redis-py's Lock releases with a compare-and-delete script, so a holder whose
    lock expired never deletes the next holder's.
    """
    lock = client.lock(key, timeout=seconds, blocking=False)
    held = bool(lock.acquire())
    try:
        yield held
    finally:
        if held:
            with suppress(LockNotOwnedError):  # it expired: it may be someone else's now
                lock.release()
