"""What each running worker published about itself in Redis (``fleet:workers``): its node name,
the settings that shape recipes, its recipes of your own, the queues it consumes, and when.

Workers write these records (``distributed/worker/fleet.py``); a command reads them here with a
Redis client alone, so ``ace-workers status`` learns who serves a queue without a broadcast.
"""

from __future__ import annotations

import json
import time
from typing import Any

import redis

from .keys import fleet_workers_key
from .replies import decode_text

__all__ = ["FRESH_SECONDS", "REFRESH_SECONDS", "fresh_consumers", "read_worker_records"]

# How often a worker refreshes its record; a record older than FRESH_SECONDS is a worker gone.
REFRESH_SECONDS = 30.0
FRESH_SECONDS = 3 * REFRESH_SECONDS


def read_worker_records(client: redis.Redis, prefix: str) -> dict[str, dict[str, Any]]:
    """Each worker's published record, by node name, stale ones too.

    Written by whoever can write to Redis: a record that is not a JSON object reads as an empty one.
    """
    raw = client.hgetall(fleet_workers_key(prefix))
    return {decode_text(node): loaded_record(value) for node, value in sorted(raw.items())}


def fresh_consumers(records: dict[str, dict[str, Any]], queue: str, *, now: float | None = None) -> list[str]:
    """The workers whose fresh record (younger than FRESH_SECONDS) says they consume ``queue``."""
    now = time.time() if now is None else now
    return sorted(
        node
        for node, record in records.items()
        if isinstance(at := record.get("at"), (int, float))
        and now - at <= FRESH_SECONDS
        and queue in _listed(record.get("queues"))
    )


def _listed(queues: Any) -> list[Any]:
    """A record's queues; a record without a list of them (an older worker's) names none."""
    return queues if isinstance(queues, list) else []


def loaded_record(raw: Any) -> dict[str, Any]:
    """A record read from Redis as a dict; anything else (absent, not JSON) as an empty one."""
    if raw is None:
        return {}
    try:
        value = json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}
