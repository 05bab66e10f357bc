"""Operating the fleet: nightly learning, evaluation and promotion, Flower, Celery tools, embedded Redis."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...lazy import lazy_exports

if TYPE_CHECKING:
    from .embedded_redis import EmbeddedRedis, resolve_redis
    from .errors import (
        EmbeddedRedisBusyError,
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
        fleet_redactor,
        read_task_file,
        resolve_targets,
    )
    from .flower import flower_argv
    from .inspect_app import build_cli_app
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
    "fleet_redactor",
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
    "EmbeddedRedisBusyError",
    "NotAWorkerApp",
    "TaskFileError",
]

# PEP 562: each name is imported from its module on first use, so importing one module of
# this package (its errors, say) does not import the others, nor Celery.
_SOURCES = (
    ".errors",
    ".embedded_redis",
    ".evaluation",
    ".flower",
    ".inspect_app",
    ".nightly",
    ".promotion",
)
__getattr__ = lazy_exports(__name__, __all__, _SOURCES)
