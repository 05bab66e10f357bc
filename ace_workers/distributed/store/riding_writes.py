"""Writes that ride along with a round trip the store makes anyway, in one non-transactional pipeline.

Writes that need not be atomic with anything, such as a tenant's metered spend, are queued on
the pipeline of a command that is sent anyway, rather than sent on their own:

- on a Redis server, a batch script (a step's start, a sample's finish: every step sends one);
- on Redis Cluster, where redis-py's pipeline runs no script and a batch's keys are in another
  slot than the riders' (possibly on another node), the limiter's read of the throttled models,
  which every process sends at most once a second while it makes LLM calls and which lives in
  the limiter's slot, with the spend windows.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Protocol

import redis

__all__ = ["RidingWrites", "is_cluster", "ride_along", "send_with_riders"]

logger = logging.getLogger(__name__)


class RidingWrites(Protocol):
    """Pending writes that board a pipeline the store is about to send."""

    def board(self, pipe: Any) -> Callable[[bool], None] | None:
        """Queue the pending writes on ``pipe``; None when none are pending.

        Returns what to call once the pipeline ran: True when it was sent, False when it was
        not (the writes are kept for the next pipeline).
        """
        ...


def is_cluster(client: redis.Redis) -> bool:
    """True for a Redis Cluster client (its pipelines run no script)."""
    from redis.cluster import RedisCluster

    return isinstance(client, RedisCluster)


def ride_along(
    client: redis.Redis, riders: RidingWrites, command: Callable[[Any], object]
) -> tuple[bool, Any]:
    """Send ``command`` (queued on a pipeline by the callable) with the riders' pending writes.

    Returns (False, None) when no writes were pending and nothing was sent (the caller sends its
    command alone), else (True, the command's reply, which may be an exception to raise).
    """
    pipe = client.pipeline(transaction=False)
    done = riders.board(pipe)
    if done is None:
        return False, None
    command(pipe)
    try:
        *rode, answer = pipe.execute(raise_on_error=False)
    except BaseException:
        done(False)
        raise
    done(True)
    _warn_of_failed(rode)
    return True, answer


def send_with_riders(
    client: redis.Redis, riders: RidingWrites | None, commands: Callable[[Any], object]
) -> list[Any]:
    """Send the commands ``commands`` queues on a transaction, after the riders' pending writes (if
    any), in one round trip; their replies in order, an error as the exception in its place.

    A transaction: what ``commands`` queues may be reads that must agree with each other. Not on
    Redis Cluster (a transaction's keys share one slot there).
    """
    pipe = client.pipeline(transaction=True)
    done = riders.board(pipe) if riders is not None else None
    boarded = len(pipe)
    commands(pipe)
    try:
        replies = pipe.execute(raise_on_error=False)
    except BaseException:
        if done is not None:
            done(False)
        raise
    if done is not None:
        done(True)
    _warn_of_failed(replies[:boarded])
    return list(replies[boarded:])


def _warn_of_failed(rode: list[Any]) -> None:
    failed = [reply for reply in rode if isinstance(reply, Exception)]
    if failed:  # the riders' writes are no reason to fail the command they rode with
        logger.warning("%d writes sent along with another command failed: %s", len(failed), failed[0])
