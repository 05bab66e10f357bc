"""Redis clients whose transactions pause just before MULTI, to force a race at a chosen moment."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import redis
from redis.client import Pipeline
from redis.cluster import RedisCluster


class _HookedPipeline(Pipeline):
    """A pipeline that calls a hook just before MULTI: after the store's reads, before its writes."""

    before_multi: Callable[[], None] = staticmethod(lambda: None)

    def multi(self) -> None:
        self.before_multi()
        super().multi()


class HookedCluster(RedisCluster):
    """HookedRedis for Redis Cluster: its transactions pause at ``before_multi`` too."""

    before_multi: Callable[[], None] = staticmethod(lambda: None)

    def pipeline(self, transaction: Any = None, shard_hint: Any = None) -> Any:
        pipe = super().pipeline(transaction=transaction, shard_hint=shard_hint)
        multi = pipe.multi

        def hooked_multi() -> None:
            self.before_multi()
            multi()

        pipe.multi = hooked_multi
        return pipe


class HookedRedis(redis.Redis):
    """A client whose transactions pause at ``before_multi``, to force a race at a chosen moment."""

    before_multi: Callable[[], None] = staticmethod(lambda: None)

    def pipeline(self, transaction: bool = True, shard_hint: Any = None) -> Pipeline:
        pipe = _HookedPipeline(self.connection_pool, self.response_callbacks, transaction, shard_hint)
        pipe.before_multi = self.before_multi
        return pipe


def hooked_like(client: redis.Redis, redis_url: str, hook: Callable[[], None]) -> Any:
    """A hooked client of the same Redis as ``client`` (a server or a cluster), calling ``hook``
    just before each MULTI; the caller closes it."""
    if isinstance(client, RedisCluster):
        node = client.get_default_node()
        hooked: Any = HookedCluster(host=node.host, port=node.port)
    else:
        from tests.support.fixtures import connect_test_redis  # fixtures import much; only here

        hooked = HookedRedis(connection_pool=connect_test_redis(redis_url).connection_pool)
    hooked.before_multi = hook
    return hooked
