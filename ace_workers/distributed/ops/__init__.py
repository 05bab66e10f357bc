"""Operating the fleet: nightly learning, evaluation and promotion, Flower, Celery tools, embedded Redis."""

from ..worker.app import build_cli_app
from .embedded_redis import EmbeddedRedis, resolve_redis
from .errors import (
    EmbeddedRedisError,
    NightlyBusy,
    NightlyInboxChanged,
    NightlyStalled,
    NotAWorkerApp,
    OpsError,
    TaskFileError,
)
from .evaluation import (
    EvaluationReport,
    EvaluationTarget,
    TaskSet,
    VersionScore,
    evaluate_versions,
    fleet_agent,
    read_task_file,
    resolve_targets,
)
from .flower import flower_argv
from .nightly import NightlyReport, NightlyRunner, beat_schedule, run_nightly
from .promotion import PROMOTION_RULE, PromotionDecision, PromotionResult, is_better, promote_label

__all__ = [
    # nightly learning
    "NightlyRunner",
    "NightlyReport",
    "beat_schedule",
    "run_nightly",
    # offline evaluation of skillbook versions, and promotion gated by it
    "read_task_file",
    "TaskSet",
    "EvaluationTarget",
    "resolve_targets",
    "fleet_agent",
    "evaluate_versions",
    "EvaluationReport",
    "VersionScore",
    "promote_label",
    "is_better",
    "PROMOTION_RULE",
    "PromotionDecision",
    "PromotionResult",
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
    "TaskFileError",
]
