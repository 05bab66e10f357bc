"""The Celery side: the app, the one step task, sample chains, recipes and the worker runtime."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...lazy import lazy_exports

if TYPE_CHECKING:
    from .app import check_app_security, check_write_concurrency, create_app, register_tasks
    from .chains import STEP_TASK, enqueue_epoch, sample_chain
    from .errors import (
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
        WriteConcurrencyError,
    )
    from .payload import ClaimCheck, check_trace, context_to_payload, payload_to_context
    from .recipes import BUILT_IN_RECIPES, Recipe, RecipeInputs
    from .redis_health import ping_redis
    from .runtime import Route, WorkerRuntime, build_llm
    from .tasks import run_step

__all__ = [
    # the app and its start checks
    "create_app",
    "check_app_security",
    "check_write_concurrency",
    "ping_redis",
    # steps as tasks
    "STEP_TASK",
    "register_tasks",
    "run_step",
    "sample_chain",
    "enqueue_epoch",
    # what a worker builds
    "WorkerRuntime",
    "Route",
    "build_llm",
    "Recipe",
    "RecipeInputs",
    "BUILT_IN_RECIPES",
    # task payloads
    "context_to_payload",
    "payload_to_context",
    "check_trace",
    "ClaimCheck",
    # errors
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
]

# PEP 562: each name is imported from its module on first use, so importing one module of
# this package (its errors, say) does not import the others, nor Celery.
_SOURCES = (
    ".errors",
    ".redis_health",
    ".app",
    ".chains",
    ".payload",
    ".recipes",
    ".runtime",
    ".tasks",
)
__getattr__ = lazy_exports(__name__, __all__, _SOURCES)
