"""The Redis client of the store: one server, or Redis Cluster for a ``redis+cluster://`` URL.

Every key of a skillbook carries the hash tag ``{sb:NAME}`` and every key of a
batch ``{batch:ID}``, so a skillbook's transactions and a batch's Lua script each
stay within one slot of a cluster (see :mod:`.keys` for the keys that span them).
"""

from __future__ import annotations

from typing import cast
from urllib.parse import urlsplit, urlunsplit

import redis
from redis.cluster import RedisCluster

__all__ = ["CLUSTER_SCHEMES", "is_cluster_url", "store_client"]

# redis+cluster:// (rediss+cluster:// with TLS): any node of the cluster; the client finds the rest.
CLUSTER_SCHEMES = {"redis+cluster": "redis", "rediss+cluster": "rediss"}


def is_cluster_url(url: str) -> bool:
    """True for a ``redis+cluster://`` or ``rediss+cluster://`` URL."""
    return urlsplit(url).scheme in CLUSTER_SCHEMES


def store_client(url: str) -> redis.Redis:
    """A client of the store at ``url``: RedisCluster for a cluster URL, else redis.Redis (client form).

    Typed as redis.Redis: RedisCluster answers every command the store sends, and the
    store's tests run on both.
    """
    parts = urlsplit(url)
    if parts.scheme in CLUSTER_SCHEMES:
        node = urlunsplit(parts._replace(scheme=CLUSTER_SCHEMES[parts.scheme]))
        return cast(redis.Redis, RedisCluster.from_url(node))
    return redis.Redis.from_url(url)
