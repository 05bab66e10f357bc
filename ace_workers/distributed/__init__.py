"""Distributed learning: ACE's steps as Celery workers on Redis, in five layers, lowest first
(docs/architecture.md, "Layers"; tests/architecture checks that each imports only those below).

- ``store``: what lives in Redis (versioned skillbooks, batch ledgers, caches); no Celery.
- ``tenancy``: many teams on one fleet: tenants, scoped API keys, the fleet-wide LLM limiter,
  samples waiting for budget, fair admission; Redis and Lua only, no Celery.
- ``worker``: the Celery app, the step task, sample chains, recipes, the worker runtime.
- ``producer``: sending inputs as batches and following them.
- ``ops``: nightly learning, Flower, the app of Celery's own tools, an embedded Redis.

``settings`` holds the one settings object, ``service`` the composition of app,
runtime and producer; the commands are in :mod:`ace_workers.cli`. Names are re-exported here lazily, so
``import ace_workers.distributed.store`` imports no Celery.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

if TYPE_CHECKING:
    from .errors import InvalidSettingError, SettingsError, UnknownSettingError
    from .ops import (
        EmbeddedRedisBusyError,
        EmbeddedRedisError,
        NightlyBusy,
        NightlyInboxChanged,
        NightlyReport,
        NightlyRunner,
        NightlyStalled,
        NotAWorkerApp,
        OpsError,
    )
    from .producer import (
        BatchExistsError,
        BatchHandle,
        BatchSizeError,
        DistributedRunner,
        HttpProducer,
        NoWorkersError,
        Producer,
        ProducerConfigError,
        ProducerError,
        RemoteStepError,
    )
    from .service import Service, build_service, local_workers
    from .settings import WorkerSettings
    from .store import (
        BatchCancelledError,
        BatchInputMissingError,
        BatchNotFoundError,
        BatchState,
        BatchStatus,
        ChangeKind,
        ChangelogTrimmedError,
        ChangeRecord,
        InvalidKeyPrefixError,
        InvalidSkillbookNameError,
        RedisSkillbookStore,
        SkillbookExistsError,
        SkillbookFullError,
        SkillbookKeys,
        SnapshotCache,
        StoreApplyResult,
        StoreError,
        UnknownSkillbookError,
        VersionConflict,
        VersionRangeError,
        list_skillbooks,
        registry_key,
        validate_skillbook_name,
    )
    from .worker import (
        ClaimMissing,
        ImportPathError,
        PayloadError,
        PayloadTooLarge,
        RecipeNotCallableError,
        RedisUnavailable,
        StepAborted,
        UnknownStepError,
        UnsafeSerializerError,
        WorkerConfigError,
        WorkerError,
        WorkerRuntime,
        WriteConcurrencyError,
        create_app,
    )

__all__ = [
    # settings and the composed service
    "WorkerSettings",
    "Service",
    "build_service",
    "local_workers",
    # store
    "RedisSkillbookStore",
    "StoreApplyResult",
    "ChangeRecord",
    "ChangeKind",
    "SnapshotCache",
    "SkillbookKeys",
    "validate_skillbook_name",
    "registry_key",
    "list_skillbooks",
    "BatchStatus",
    "BatchState",
    # worker
    "create_app",
    "WorkerRuntime",
    # producer
    "Producer",
    "HttpProducer",
    "BatchHandle",
    "DistributedRunner",
    # ops
    "NightlyRunner",
    "NightlyReport",
    # errors, by layer
    "SettingsError",
    "InvalidSettingError",
    "UnknownSettingError",
    "StoreError",
    "VersionConflict",
    "UnknownSkillbookError",
    "SkillbookExistsError",
    "SkillbookFullError",
    "InvalidSkillbookNameError",
    "InvalidKeyPrefixError",
    "VersionRangeError",
    "ChangelogTrimmedError",
    "BatchCancelledError",
    "BatchNotFoundError",
    "BatchInputMissingError",
    "WorkerError",
    "WorkerConfigError",
    "UnsafeSerializerError",
    "WriteConcurrencyError",
    "RedisUnavailable",
    "PayloadError",
    "PayloadTooLarge",
    "ClaimMissing",
    "ImportPathError",
    "RecipeNotCallableError",
    "UnknownStepError",
    "StepAborted",
    "ProducerError",
    "BatchExistsError",
    "BatchSizeError",
    "NoWorkersError",
    "ProducerConfigError",
    "RemoteStepError",
    "OpsError",
    "NightlyBusy",
    "NightlyStalled",
    "NightlyInboxChanged",
    "EmbeddedRedisError",
    "EmbeddedRedisBusyError",
    "NotAWorkerApp",
]

# Where names are looked up, in order: the store before anything that imports Celery.
_SOURCES = (".settings", ".errors", ".store", ".worker", ".producer", ".ops", ".service")
__getattr__ = lazy_exports(__name__, __all__, _SOURCES)
