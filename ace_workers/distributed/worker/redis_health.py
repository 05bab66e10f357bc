"""Is Redis there, and is it full: the checks a command makes before it works, with a Redis client alone.

Kept apart from the Celery app (``app.py`` re-exports them) so a command that only reads state
asks them without importing Celery.
"""

from __future__ import annotations

import redis
from redis.backoff import NoBackoff
from redis.exceptions import ExecAbortError
from redis.retry import Retry

from ..connections import client_url_for
from .errors import RedisUnavailable

__all__ = ["is_redis_full", "ping_redis"]


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
