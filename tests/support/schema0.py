"""Unversioned data (schema 0) in a test Redis: the fixture a fleet of commit f150b23 left, and stamps.

``tests/fixtures/schema0/redis.json`` was written by ``make_fixture.py`` beside it, run with that
commit's code: every key under the prefix ``ace`` with its type, TTL and value.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import redis

from ace_workers.distributed.store.schema import SCHEMA_VERSION, record_schema

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "schema0" / "redis.json"
FIXTURE_PREFIX = "ace"


def _encoded(value: Any) -> bytes:
    return base64.b64decode(value["base64"]) if isinstance(value, dict) else str(value).encode()


def load_schema0(client: redis.Redis) -> int:
    """Write every key of the fixture into ``client``'s database (TTLs as recorded); how many keys."""
    keys = json.loads(FIXTURE.read_text(encoding="utf-8"))
    with client.pipeline(transaction=False) as pipe:
        for key, entry in keys.items():
            kind, value = entry["type"], entry["value"]
            if kind == "string":
                pipe.set(key, _encoded(value))
            elif kind == "hash":
                pipe.hset(key, mapping={f: _encoded(v) for f, v in value.items()})
            elif kind == "list":
                pipe.rpush(key, *[_encoded(v) for v in value])
            elif kind == "set":
                pipe.sadd(key, *[_encoded(v) for v in value])
            elif kind == "zset":
                pipe.zadd(key, {member: score for member, score in value})
            else:  # stream: entries keep their ids
                for entry_id, fields in value:
                    pipe.xadd(key, {f: _encoded(v) for f, v in fields.items()}, id=entry_id)
            if entry["ttl_ms"] > 0:
                pipe.pexpire(key, entry["ttl_ms"])
        pipe.execute()
    return len(keys)


def snapshot_keys(client: redis.Redis) -> dict[bytes, tuple[str, Any, bool]]:
    """Every key of ``client``'s database: its type, DUMP payload and whether it has a TTL."""
    return {
        key: (client.type(key).decode(), client.dump(key), client.pttl(key) > 0)
        for key in sorted(client.scan_iter())
    }


def stamp_current_schema(client: redis.Redis, prefix: str) -> None:
    """Stamp ``prefix`` as the first process of this version does: for data a test wrote by hand."""
    record_schema(client, prefix, SCHEMA_VERSION)
