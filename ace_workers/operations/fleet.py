"""The fleet's state as a client sees it: one Redis connection, the key prefix, and the stores on it.

What a command, the console or MCP reads and writes goes through a :class:`FleetClient`: no
Celery app, no broker, no worker runtime, no LLM client. Opening one checks the data's schema
(one round trip, stamping a new Redis). Only workers build a worker runtime.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import cached_property
from typing import TYPE_CHECKING, Any

import redis

from ..distributed.settings import WorkerSettings
from ..distributed.store.batches import BatchStore
from ..distributed.store.errors import CorruptDataError, UnknownSkillbookError
from ..distributed.store.keys import validate_skillbook_name
from ..distributed.store.schema import SchemaState, connect_checked
from ..distributed.store.worker_records import read_worker_records
from ..distributed.tenancy.admission_scheduler import AdmissionState
from ..distributed.tenancy.api_keys import ApiKeys
from ..distributed.tenancy.tenants import TenantMap, TenantRegistry

# The skillbook store (its snapshots, numpy index, pydantic models) and the limiter are imported
# where a command uses them: --help, --version and a status need neither.
if TYPE_CHECKING:
    from ..distributed.store.store import RedisSkillbookStore
    from ..distributed.tenancy.limiter import Limiter

__all__ = ["FleetClient", "open_fleet"]


class FleetClient:
    """Readers and writers of the fleet's state in one Redis, under one key prefix.

    ``redis_url`` is the Redis of the fleet (the store's, unless ``settings.store_url`` names
    another). With ``schema_checked`` (default) the data's schema is checked at once.
    """

    def __init__(self, settings: WorkerSettings, redis_url: str, *, schema_checked: bool = True) -> None:
        self.settings = settings
        self.redis: redis.Redis
        self.schema: SchemaState | None
        self.redis, self.where, self.schema = connect_checked(
            settings.store_url or redis_url, settings.queue_prefix, checked=schema_checked
        )

    @classmethod
    def sharing(cls, client: redis.Redis, settings: WorkerSettings) -> FleetClient:
        """A client over a Redis connection a long-running front end opened already (and checked the
        schema of): the console's. Its owner closes that connection; :meth:`close` leaves it open."""
        fleet = cls.__new__(cls)
        fleet.settings = settings
        fleet.redis = client
        fleet.where = "the fleet's Redis"
        fleet.schema = None
        fleet._shared = True
        return fleet

    _shared = False  # True: the connection is another's (sharing)

    @property
    def prefix(self) -> str:
        """The prefix of every key (ACE_QUEUE_PREFIX)."""
        return self.settings.queue_prefix

    def close(self) -> None:
        """Close the Redis connection (unless it is shared: its owner closes it)."""
        if not self._shared:
            self.redis.close()

    def store(self, name: str) -> RedisSkillbookStore:
        """The store of skillbook ``name``, which may not exist yet (a first write makes it)."""
        from ..distributed.store.store import RedisSkillbookStore

        validate_skillbook_name(name)
        return RedisSkillbookStore(
            self.redis,
            name,
            prefix=self.prefix,
            changelog_maxlen=self.settings.changelog_maxlen,
            max_skills=self.settings.max_skillbook_skills,
            provenance_keep=self.settings.provenance_keep,
            retention=self.settings.retention_policy(),
        )

    def existing_store(self, name: str) -> RedisSkillbookStore:
        """The store of skillbook ``name``; UnknownSkillbookError, naming the ones there are, if none."""
        store = self.store(name)
        if not store.exists():
            raise UnknownSkillbookError(name, self.skillbook_names())
        return store

    def skillbook_names(self) -> list[str]:
        """The names of every skillbook, sorted."""
        from ..distributed.store.store import list_skillbooks

        return list_skillbooks(self.redis, self.prefix)

    def skillbook_registry(self) -> tuple[list[str], dict[str, CorruptDataError]]:
        """The names of every skillbook, sorted; and each registry member no skillbook can have.

        For a view shared by everyone, which one bad member must not take down.
        """
        from ..distributed.store.store import read_registry

        return read_registry(self.redis, self.prefix)

    @cached_property
    def batches(self) -> BatchStore:
        """The batch ledger."""
        return BatchStore(self.redis, prefix=self.prefix, ttl_seconds=self.settings.result_ttl_seconds)

    @cached_property
    def tenants(self) -> TenantRegistry:
        """The tenants and what they own."""
        return TenantRegistry(self.redis, prefix=self.prefix)

    def tenant_map(self) -> TenantMap:
        """Who owns which skillbook, read now."""
        return self.tenants.map()

    @cached_property
    def api_keys(self) -> ApiKeys:
        """The fleet's scoped API keys."""
        return ApiKeys(self.redis, prefix=self.prefix)

    @cached_property
    def admission(self) -> AdmissionState:
        """Which samples of which batches may be sent (ACE_ADMISSION_WINDOW)."""
        return AdmissionState(self.redis, prefix=self.prefix)

    @cached_property
    def limiter(self) -> Limiter:
        """The fleet's LLM limiter, here to read what each tenant spent (``tenant usage``)."""
        from ..distributed.tenancy.limiter import Limiter

        return Limiter(self.redis, prefix=self.prefix, model_limits=self.settings.model_limits_map())

    def worker_records(self) -> dict[str, dict[str, Any]]:
        """What each running worker published about itself (settings, queues, when), by node name."""
        return read_worker_records(self.redis, self.prefix)


@contextmanager
def open_fleet(settings: WorkerSettings, redis_url: str) -> Iterator[FleetClient]:
    """A :class:`FleetClient` on ``redis_url``, closed when the block ends."""
    fleet = FleetClient(settings, redis_url)
    try:
        yield fleet
    finally:
        fleet.close()
