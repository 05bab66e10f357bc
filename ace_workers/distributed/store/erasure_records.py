"""The erasure records: who forgot what, when, and how many records of each place went.

One JSON record per ``forget`` run, pushed at the head of one list (newest first); it holds the
selector and counts, never the erased content. The nightly sweep drops records older than
ACE_RETENTION_ERASURE_DAYS (store/retention.py).
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import redis

from .keys import erasures_key
from .replies import decode_json

__all__ = ["new_erasure_id", "read_erasures", "record_erasure"]


def new_erasure_id() -> str:
    """A fresh id for one erasure: what its record, its log line and its change-log notes name."""
    return f"er-{uuid.uuid4().hex[:12]}"


def record_erasure(client: redis.Redis, prefix: str, record: dict[str, Any]) -> None:
    """Push ``record`` (a JSON object with ``at``, an ISO-8601 time) as the newest erasure record."""
    client.lpush(erasures_key(prefix), json.dumps(record, ensure_ascii=False))


def read_erasures(client: redis.Redis, prefix: str, limit: int = 50) -> list[dict[str, Any]]:
    """The newest ``limit`` erasure records, newest first (one that is not a JSON object is left out)."""
    key = erasures_key(prefix)
    records = [decode_json(raw, key) for raw in client.lrange(key, 0, max(0, limit - 1))]
    return [record for record in records if isinstance(record, dict)]
