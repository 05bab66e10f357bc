"""Errors of producers: batches refused, steps that failed on a worker, no worker to send to."""

from __future__ import annotations

from ...counts import noun_for
from ...errors import AceError, SettingsError

__all__ = [
    "ProducerError",
    "BatchExistsError",
    "BatchSizeError",
    "FleetModelMismatch",
    "HookInputError",
    "IntakeBusyError",
    "IntakeError",
    "IntakeForbiddenError",
    "IntakeRequestError",
    "IntakeUnauthorizedError",
    "IntakeUnavailableError",
    "LabelNotServedError",
    "NoWorkersError",
    "ProducerConfigError",
    "PartitionMismatchError",
    "RemoteStepError",
    "TooManyItemsError",
]


class ProducerError(AceError):
    """A producer could not send or follow a batch."""


class BatchExistsError(ProducerError, ValueError):
    """A batch id given to send under is taken already; nothing was sent (samples are never sent twice)."""

    def __init__(self, batch_id: str) -> None:
        self.batch_id = batch_id
        super().__init__(f"batch {batch_id!r} exists already; its samples are not sent twice")


class BatchSizeError(ProducerError, ValueError):
    """An input held more items than a batch may (ACE_MAX_BATCH_SIZE), or than its declared count.

    ``sent`` items went out as batch ``batch_id`` (0 and None when refused before sending).
    """

    def __init__(self, message: str, *, limit: int, sent: int = 0, batch_id: str | None = None) -> None:
        self.limit = limit
        self.sent = sent
        self.batch_id = batch_id
        super().__init__(message)


class TooManyItemsError(ProducerError):
    """An input yielded one item more than its batch may hold; the producer turns it into BatchSizeError."""


class RemoteStepError(ProducerError):
    """A step failed in a worker; carries the step name and the worker's traceback summary."""

    def __init__(self, step: str, error: str, traceback: str = "") -> None:
        self.step = step
        self.error = error
        self.traceback = traceback
        super().__init__(f"step {step} failed in a worker: {error}")


class HookInputError(ProducerError, ValueError):
    """An agent's hook passed no usable input on stdin (no JSON object, no transcript file)."""


class NoWorkersError(ProducerError):
    """Work was about to be sent to, or waited for on, queues no worker serves (named in ``queues``)."""

    def __init__(self, message: str, *, queues: list[str] | None = None) -> None:
        self.queues = list(queues or [])
        super().__init__(message)


class ProducerConfigError(ProducerError, ValueError):
    """A producer was built without what it needs (a Redis URL)."""


class PartitionMismatchError(ProducerConfigError):
    """The producer routes writes for another ACE_WRITE_PARTITIONS than the workers run with."""

    def __init__(self, producer: int, workers: int) -> None:
        self.producer = producer
        self.workers = workers
        super().__init__(
            f"ACE_WRITE_PARTITIONS={producer} here, but the workers run with {workers}: the writes "
            "would go to queues no writer serves. Set the same value on producers and workers; "
            "nothing was sent"
        )


class LabelNotServedError(ProducerError, ValueError):
    """A label or canary share was given for a recipe whose steps run no agent: nothing would read it."""

    def __init__(self, recipe: str, labels: list[str]) -> None:
        self.recipe = recipe
        self.labels = labels
        super().__init__(
            f"recipe {recipe!r} runs no agent step, so nothing would be served by "
            f"{noun_for(len(labels), 'label')} {', '.join(labels)}: "
            "name the skillbook without a label, and give no canary share"
        )


class FleetModelMismatch(ProducerError, SettingsError):
    """A model was named for a batch (``learn --model``) that the fleet's workers do not run.

    ``node`` and ``variable`` name the first worker and model setting that differ and ``theirs`` its
    value; all three None when no running worker of the batch's queues published its models.
    """

    def __init__(self, model: str, node: str | None, variable: str | None, theirs: str | None) -> None:
        self.model = model
        self.node = node
        self.variable = variable
        self.theirs = theirs
        found = (
            f"worker {node} runs {variable}={theirs!r}"
            if node is not None
            else "no running worker of its queues says which models it runs"
        )
        super().__init__(
            f"--model {model!r} is not the model the workers run: {found}; on a fleet each worker calls "
            "the models of its own settings (drop --model, or start workers with that model)"
        )


class IntakeError(ProducerError):
    """Intake (``ace-workers intake``) refused or failed a request; ``status``, ``kind`` and the server's
    ``message`` say why (``status`` 0: it could not be reached)."""

    def __init__(self, url: str, status: int, kind: str, message: str) -> None:
        self.url = url
        self.status = status
        self.kind = kind
        self.message = message
        answered = f"HTTP {status} {kind}" if status else "unreachable"
        super().__init__(f"intake at {url}: {answered}: {message}")


class IntakeRequestError(IntakeError, ValueError):
    """Intake refused the request itself (400, 413): a body, field or header to fix; nothing was enqueued."""


class IntakeUnauthorizedError(IntakeError, PermissionError):
    """Intake authenticated no API key (401): none was sent, or it is unknown or revoked."""


class IntakeForbiddenError(IntakeError, PermissionError):
    """The API key may not learn on the skillbook (403: its role; 404: another tenant's skillbook)."""


class IntakeBusyError(IntakeError):
    """The fleet was busy (429) through every retry; ``retry_after`` is what intake last said to wait."""

    def __init__(self, url: str, status: int, kind: str, message: str, *, retry_after: float) -> None:
        self.retry_after = retry_after
        super().__init__(url, status, kind, message)


class IntakeUnavailableError(IntakeError):
    """Intake did not answer, or failed (5xx), through every retry."""
