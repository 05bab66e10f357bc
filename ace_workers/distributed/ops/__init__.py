"""Operating the fleet: nightly learning, Flower, the app of Celery's own tools, an embedded Redis."""

from .embedded_redis import EmbeddedRedis, resolve_redis
from .errors import (
    EmbeddedRedisError,
    NightlyBusy,
    NightlyInboxChanged,
    NightlyStalled,
    NotAWorkerApp,
    OpsError,
)
from .flower import flower_argv
from .inspect_app import build_cli_app
from .nightly import NightlyReport, NightlyRunner, beat_schedule, register_nightly_task

__all__ = [
    # nightly learning
    "NightlyRunner",
    "NightlyReport",
    "beat_schedule",
    "register_nightly_task",
    # monitoring and Celery's tools
    "flower_argv",
    "build_cli_app",
    # an embedded Redis for one-process runs
    "EmbeddedRedis",
    "resolve_redis",
    # errors
    "OpsError",
    "NightlyBusy",
    "NightlyStalled",
    "NightlyInboxChanged",
    "EmbeddedRedisError",
    "NotAWorkerApp",
]
