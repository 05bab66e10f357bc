"""Errors of the Celery side: a worker refused by its start checks, Redis down, a bad task payload."""

from __future__ import annotations

from collections.abc import Mapping

from ...errors import AceError, SettingsError
from ..connections import redact_url
from ..settings import env_name

__all__ = [
    "WorkerError",
    "WorkerConfigError",
    "UnsafeSerializerError",
    "WriteConcurrencyError",
    "WritePartitionsChanged",
    "NotAWorkerApp",
    "RedisUnavailable",
    "PayloadError",
    "PayloadTooLarge",
    "ClaimMissing",
    "UnknownRecipeError",
    "ImportPathError",
    "RecipeNotCallableError",
    "UnknownStepError",
    "FleetSettingsMismatch",
    "RecipeShapeMismatch",
    "StepAborted",
    "StepOutcome",
    "StepDropped",
    "StepRequeued",
    "StepRetry",
    "ForeignTenantError",
    "BrokerUnavailable",
    "RecipeRoutesError",
]


class WorkerError(AceError):
    """A worker, or the Celery app it runs on, could not do its part."""


class WorkerConfigError(WorkerError, ValueError):
    """A Celery app or worker is configured against the reliability rules; the worker refuses to start."""


class UnsafeSerializerError(WorkerConfigError):
    """The app would serialise or accept pickle; ``settings`` maps each offending setting to its value."""

    def __init__(self, settings: Mapping[str, object]) -> None:
        self.settings = dict(settings)
        found = ", ".join(f"{name}={value!r}" for name, value in self.settings.items())
        super().__init__(
            f"refusing to start: the Celery app allows pickle ({found}); a pickled message runs code on "
            "the worker that loads it. Use JSON only (create_app configures it)."
        )


class WriteConcurrencyError(WorkerConfigError):
    """A worker would serve the write queue with more than one slot, so skillbook writes could race."""

    def __init__(self, queue: str, concurrency: int) -> None:
        self.queue = queue
        self.concurrency = concurrency
        super().__init__(
            f"refusing to serve the write queue {queue!r} with concurrency {concurrency}: skillbook writers "
            "must run one at a time. Use concurrency 1 for the write queue (a separate worker), "
            "or force it if you know why."
        )


class WritePartitionsChanged(WorkerConfigError):
    """ACE_WRITE_PARTITIONS differs from the fleet's while messages routed by the old count wait."""

    def __init__(self, recorded: int, wanted: int, waiting: Mapping[str, int]) -> None:
        self.recorded = recorded
        self.wanted = wanted
        self.waiting = dict(waiting)
        queues = ", ".join(f"{queue} ({count})" for queue, count in sorted(waiting.items()))
        if not waiting:  # a worker that is no writer never changes the fleet's count
            super().__init__(
                f"ACE_WRITE_PARTITIONS={wanted}, but the fleet's writers run with {recorded}: "
                "set the same value on every role"
            )
            return
        super().__init__(
            f"ACE_WRITE_PARTITIONS={wanted}, but the fleet runs with {recorded} and messages routed "
            f"for {recorded} wait in {queues}: drain first (stop the producers, let every queue empty, "
            f"stop the writers), then change it everywhere and start one writer per partition"
        )


class NotAWorkerApp(WorkerConfigError):
    """``celery worker`` was started on the command-line app, which has no step task."""


class BrokerUnavailable(WorkerError, ConnectionError):
    """The broker could not be reached or refused a command (a publish, a queue's depth, an inspect)."""

    def __init__(self, doing: str, reason: BaseException | str) -> None:
        self.doing = doing
        self.reason = str(reason)
        super().__init__(f"cannot {doing}: {self.reason}")


class RedisUnavailable(WorkerError, ConnectionError):
    """Redis did not answer a PING; ``url`` is the address with its password masked."""

    def __init__(self, url: str, timeout: float, reason: BaseException | str) -> None:
        self.url = redact_url(url)
        self.timeout = timeout
        self.reason = str(reason)
        super().__init__(
            f"Redis at {self.url} did not answer within {timeout:g} s ({self.reason}). Start redis-server "
            f"there, fix {env_name('redis_url')}, or leave it unset to run an embedded Redis."
        )


class PayloadError(WorkerError, TypeError):
    """A step context cannot travel as JSON, or a payload does not turn back into one."""

    def __init__(self, message: str, *, field: str = "", path: str | None = None) -> None:
        self.field = field
        self.path = path
        super().__init__(message)


class PayloadTooLarge(PayloadError, ValueError):
    """A value's JSON is larger than the limit it must respect."""

    def __init__(self, message: str, *, field: str = "", size: int = 0, limit: int = 0) -> None:
        self.size = size
        self.limit = limit
        super().__init__(message, field=field)


class ClaimMissing(PayloadError, LookupError):
    """A payload refers to a claimed value that is no longer in Redis (its TTL ran out)."""

    def __init__(self, message: str, *, field: str = "", key: str = "") -> None:
        self.key = key
        super().__init__(message, field=field)


class UnknownRecipeError(WorkerError, ValueError):
    """A task or a producer named a recipe this process is not configured with; nothing was imported."""

    def __init__(self, name: str, known: list[str]) -> None:
        self.name = name
        self.known = known
        super().__init__(
            f"unknown recipe {name!r}: this process runs {', '.join(known)}; recipes of your own are "
            "named in ACE_RECIPES (name=package.module:function) on the workers and the producer"
        )


class ImportPathError(WorkerError, ValueError):
    """An import path (``package.module:attribute``, of a recipe or an LLM factory) does not import."""

    def __init__(self, message: str, *, path: str) -> None:
        self.path = path
        super().__init__(message)


class RecipeNotCallableError(ImportPathError):
    """A recipe's import path names something that is not callable."""

    def __init__(self, name: str, path: str) -> None:
        self.name = name
        super().__init__(f"recipe {name!r} ({path}) is not callable", path=path)


class UnknownStepError(WorkerError, ValueError):
    """A message or dead letter names a step its recipe does not have (the recipe changed since)."""

    def __init__(self, recipe: str, index: int, steps: int) -> None:
        self.recipe = recipe
        self.index = index
        self.steps = steps
        super().__init__(f"recipe {recipe!r} has steps 0 to {steps - 1}; no step {index}")


class RecipeRoutesError(WorkerError, ValueError):
    """A recipe lists other step classes when its roles are built than when it is routed."""

    def __init__(self, recipe: str, routed: list[str], built: object) -> None:
        self.recipe = recipe
        self.routed = routed
        steps = [type(step).__name__ for step in built] if isinstance(built, list | tuple) else built
        super().__init__(
            f"recipe {recipe!r} lists the steps {routed} when routed but {steps} when built: a recipe's "
            "step classes must not depend on its roles (the producer routes it without building them)"
        )


class FleetSettingsMismatch(WorkerError, SettingsError):
    """A running worker has other settings that shape recipes than this process: nothing was sent."""

    def __init__(self, node: str, difference: str) -> None:
        self.node = node
        self.difference = difference
        super().__init__(
            f"{difference} on worker {node}: give the producer and every worker the same value "
            "(nothing was sent)"
        )


class RecipeShapeMismatch(WorkerError, ValueError):
    """A message was sent for other steps of its recipe than this worker has (their settings differ)."""

    def __init__(self, recipe: str, difference: str) -> None:
        self.recipe = recipe
        self.difference = difference
        super().__init__(
            f"recipe {recipe!r} differs between the sender and this worker: {difference}; the sample is "
            "dead-lettered, and 'ace-workers dead-letters retry' sends it again once the settings agree"
        )


class StepAborted(WorkerError):
    """A step raised what Celery mishandles (SystemExit, MemoryError, ...); its sample was failed."""


class StepOutcome(WorkerError):
    """How a step's delivery ends without a result; the task wrapper (app.py) tells the broker."""


class StepDropped(StepOutcome):
    """The step's message is acknowledged and nothing more of it runs (batch cancelled, step parked)."""


class StepRequeued(StepOutcome):
    """The step's message goes back to its queue, to run again: ``reason`` is why (Redis unreachable)."""

    def __init__(self, reason: BaseException) -> None:
        self.reason = reason
        super().__init__(f"step requeued: {type(reason).__name__}: {reason}")


class StepRetry(StepOutcome):
    """The step is sent again in ``countdown`` seconds after ``error``; this message is acknowledged.

    ``max_retries`` is the cap the broker's retry is told (the project's, not Celery's default).
    """

    def __init__(self, error: BaseException, countdown: float, max_retries: int) -> None:
        self.error = error
        self.countdown = countdown
        self.max_retries = max_retries
        super().__init__(f"step retried in {countdown:.1f} s: {type(error).__name__}: {error}")


class ForeignTenantError(WorkerError):
    """A step message names a skillbook its tenant does not own: refused, nothing of it runs or writes.

    ``tenant`` is the tenant the message was sent for (its batch's), ``owner`` the tenant that
    owns ``skillbook`` on this worker's view of the tenants.
    """

    def __init__(self, skillbook: str, owner: str, tenant: object) -> None:
        self.skillbook = skillbook
        self.owner = owner
        self.tenant = tenant
        super().__init__(
            f"skillbook {skillbook!r} belongs to tenant {owner!r}, but this message was sent for tenant "
            f"{tenant!r}: refused, nothing written (a tenant's batch learns into its own skillbooks only)"
        )
