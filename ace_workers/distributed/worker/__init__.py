"""The Celery side: the app, the one step task, sample chains, recipes and the worker runtime."""

from .app import check_app_security, check_write_concurrency, create_app, ping_redis, register_tasks
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
