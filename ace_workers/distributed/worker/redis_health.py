"""Is Redis there, and is it full: ping it, recognise its out-of-memory refusal, and wait for room.

A refused write (or MULTI) wrote nothing, so writing it again once there is room is safe: the
worker's steps, its deliveries and its start all wait instead of failing. Kept apart from the
Celery app, so a command that only reads state asks these without importing Celery.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

import redis
from redis.backoff import NoBackoff
from redis.exceptions import ExecAbortError
from redis.retry import Retry

from ...counts import counted
from ..connections import client_url_for
from ..store.keys import DEFAULT_PREFIX, write_probe_key
from .errors import RedisUnavailable

__all__ = [
    "MAX_MEMORY_WAIT_SECONDS",
    "is_redis_full",
    "ping_redis",
    "redis_out_of_memory",
    "refuses_writes",
    "wait_while_redis_is_full",
    "when_redis_has_room",
]

logger = logging.getLogger(__name__)

# The longest wait between two looks at a Redis that is out of memory.
MAX_MEMORY_WAIT_SECONDS = 30.0

T = TypeVar("T")


def redis_out_of_memory(url: str, timeout: float = 3.0, *, prefix: str = DEFAULT_PREFIX) -> bool:
    """True if the Redis at ``url`` refuses writes because it reached its maxmemory (noeviction).

    It tries one write, of a key under ``prefix`` (ACE_QUEUE_PREFIX) that expires in a second.
    """
    client = redis.Redis.from_url(
        client_url_for(url),
        socket_connect_timeout=timeout,
        socket_timeout=timeout,
        retry=Retry(NoBackoff(), 0),
    )
    try:
        return refuses_writes(client, prefix=prefix)
    finally:
        client.close()


def refuses_writes(client: Any, *, prefix: str = DEFAULT_PREFIX) -> bool:
    """True if Redis (``client``'s, a server or a cluster) is out of memory: one probing write is refused.

    Connection errors are raised: a Redis that is down is not full.
    """
    try:
        # A MULTI, like kombu's own commands: what a worker starting now would meet.
        pipe = client.pipeline()
        pipe.set(write_probe_key(uuid.uuid4().hex, prefix), 1, px=1000)
        pipe.execute()
    except (redis.OutOfMemoryError, ExecAbortError) as exc:
        return is_redis_full(exc)
    return False


def when_redis_has_room(call: Callable[[], T], pause: Callable[[int], None], what: str) -> T:
    """``call()``, called again after ``pause(refusals)`` each time a full Redis refuses it.

    A refused command wrote nothing (nor did a refused MULTI), so calling it again is safe.
    ``what`` names the call in the log. Any other error is raised.
    """
    refusals = 0
    while True:
        try:
            return call()
        except redis.ResponseError as exc:
            if not is_redis_full(exc):
                raise
        refusals += 1
        logger.warning(
            "Redis is out of memory: %s waits for room (refused %s)", what, counted(refusals, "time")
        )
        pause(refusals)


def wait_while_redis_is_full(
    url: str, on_wait: Callable[[str], None] | None = None, *, prefix: str = DEFAULT_PREFIX
) -> float:
    """Block while the Redis at ``url`` is out of memory, looking again with a growing backoff.

    ``on_wait`` hears what is waited for (the worker shows it on /healthz); returns the seconds waited.
    ``prefix`` is the key prefix of the probing write (:func:`redis_out_of_memory`).
    """
    waited, delay = 0.0, 1.0
    while redis_out_of_memory(url, prefix=prefix):
        problem = f"Redis is out of memory (maxmemory); the worker waits for room, next look in {delay:.0f} s"
        logger.warning("%s", problem)
        if on_wait is not None:
            on_wait(problem)
        time.sleep(delay)
        waited += delay
        delay = min(2 * delay, MAX_MEMORY_WAIT_SECONDS)
    return waited


def ping_redis(url: str, timeout: float = 3.0) -> None:
    """PING the Redis at ``url`` once, no retries; RedisUnavailable if it does not answer within ``timeout``.

    Accepts every URL form the settings accept (redis://, rediss://, unix://, redis+socket://).
    """
    client = _probe_client(url, timeout)
    try:
        client.ping()
    except (redis.RedisError, OSError) as exc:
        raise RedisUnavailable(url, timeout, exc) from exc
    finally:
        client.close()


def _probe_client(url: str, timeout: float) -> redis.Redis:
    # redis-py retries failed commands with backoff by default; a health probe must not.
    return redis.Redis.from_url(
        client_url_for(url),
        socket_connect_timeout=timeout,
        socket_timeout=timeout,
        retry=Retry(NoBackoff(), 0),
    )


def is_redis_full(exc: BaseException) -> bool:
    """True if ``exc`` is Redis refusing a write for want of memory (maxmemory with noeviction).

    Also when a transaction was aborted for it (EXECABORT, the refusal as its context).
    """
    if isinstance(exc, redis.OutOfMemoryError):
        return True
    if isinstance(exc, ExecAbortError) and exc.__context__ is not None and exc.__context__ is not exc:
        return is_redis_full(exc.__context__)
    return isinstance(exc, redis.ResponseError) and "maxmemory" in str(exc)
