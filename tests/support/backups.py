"""A fleet with something of every kind of state a backup copies, and every key's content read raw.

The raw reader is written apart from ``store/backup_records.py`` (plain redis-py calls per type),
so a round trip is checked against what Redis holds, not against the code under test.
"""

from __future__ import annotations

from typing import Any

import redis

from ace_workers.core import UpdateBatch, UpdateOperation
from ace_workers.distributed.store.keys import SkillbookKeys, schema_key, schema_lock_key
from ace_workers.distributed.store.review_policy import parse_policy
from ace_workers.distributed.tenancy import Tenant
from ace_workers.operations import FleetClient

ALICE = "user:alice"
# Not UTF-8: a cached embedding's float32 bytes look like this.
BINARY = b"\xff\x00\x80\xfe"


def _add(content: str) -> UpdateBatch:
    return UpdateBatch(operations=[UpdateOperation(type="ADD", section="math", content=content)])


def seed_fleet(fleet: FleetClient) -> str:
    """Skillbooks with history, labels, a pending proposal, an idempotency key with a TTL and a
    binary embedding; two tenants; an API key. The key's secret."""
    fleet.tenants.add(Tenant("alpha", skillbooks=("book",)))
    fleet.tenants.add(Tenant("beta", prefixes=("beta-",), weight=3))
    book = fleet.store("book")
    for content in ("Carry the one", "Check units", "Round at the end"):
        book.apply(_add(content), idempotency_key=f"k:{content}")
    book.labels.set("prod", 1, actor=ALICE, note="first")
    book.labels.set("canary", 3, actor=ALICE)
    book.review.set_policy(parse_policy("ADD=review"), actor=ALICE)
    book.review.propose_update(_add("Show your working"), idempotency_key="p1")
    fleet.redis.hset(SkillbookKeys("book", fleet.prefix).embeddings, "vec", BINARY)
    fleet.store("beta-notes").apply(_add("Be brief"))
    _, secret = fleet.api_keys.create("alpha", "read", note="ci", actor=ALICE)
    return secret


def raw_content(client: redis.Redis, key: str, key_type: str) -> Any:
    """What ``key`` (of ``key_type``) holds, read with the plain redis-py command of its type."""
    if key_type == "string":
        return client.get(key)
    if key_type == "hash":
        return client.hgetall(key)
    if key_type == "list":
        return client.lrange(key, 0, -1)
    if key_type == "set":
        return client.smembers(key)
    if key_type == "zset":
        return client.zrange(key, 0, -1, withscores=True)
    assert key_type == "stream", key_type
    return client.xrange(key)


def raw_state(client: redis.Redis, prefix: str) -> dict[str, tuple[str, bool, Any]]:
    """Every key under ``prefix`` but the schema stamp: name relative to the prefix -> (type,
    whether it has a TTL, content)."""
    stamp = {schema_key(prefix), schema_lock_key(prefix)}
    state = {}
    for raw in client.scan_iter(match=f"{prefix}:*"):
        key = raw.decode()
        if key in stamp:
            continue
        key_type = client.type(key).decode()
        state[key[len(prefix) + 1 :]] = (key_type, client.pttl(key) > 0, raw_content(client, key, key_type))
    return state
