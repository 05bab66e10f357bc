"""The Celery service, for the commands that send work to workers or run them (enqueue, learn, retry).

Importing this module costs nothing: Celery, the runtime and the producer are imported when a
function here runs, so the commands that only read or change Redis state (on a FleetClient, see
:mod:`.fleet`) never load them.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from ..distributed.settings import WorkerSettings
from .options import require_shared_redis

if TYPE_CHECKING:
    from ..distributed.producer.producer import BatchHandle
    from ..distributed.service import Service

__all__ = ["enqueue_file", "enqueue_inputs", "open_service", "require_workers", "store_or_fail"]


def enqueue_file(
    service: Service,
    path: Path,
    count: int,
    skillbook: str,
    epochs: int,
    recipe: str,
    canary: float | None = None,
    batch_id: str | None = None,
) -> BatchHandle:
    """Send a scanned JSONL file as one batch of ``count`` inputs (as ``batch_id``: default a new id)."""
    return enqueue_inputs(
        service, _inputs(path, recipe), path, count, skillbook, epochs, recipe, canary, batch_id
    )


def enqueue_inputs(
    service: Service,
    inputs: Iterator[Any],
    path: Path,
    count: int,
    skillbook: str,
    epochs: int,
    recipe: str,
    canary: float | None = None,
    batch_id: str | None = None,
) -> BatchHandle:
    """Send the ``count`` scanned inputs read from ``path`` as one batch (``skillbook`` may be NAME@LABEL)."""
    from ..distributed.producer.errors import BatchSizeError, LabelNotServedError
    from ..distributed.store.errors import UnknownLabelError

    producer = service.producer
    enqueue = producer.enqueue_samples if recipe == "ace" else producer.enqueue_traces
    try:
        # Streamed whatever the epochs: workers send later epochs from the inputs the batch stored.
        return enqueue(
            inputs, skillbook, epochs, recipe=recipe, batch_id=batch_id, count=count, canary=canary
        )
    except BatchSizeError as exc:
        # The input changed between the two passes.
        raise typer.BadParameter(f"{path}: {exc}") from exc
    except (UnknownLabelError, LabelNotServedError) as exc:  # refused before anything was sent
        raise typer.BadParameter(str(exc), param_hint="--skillbook") from exc


def require_workers(service: Service, recipe: str, skillbook: str) -> None:
    """Raise NoWorkersError unless some worker answers for every queue ``recipe`` uses for ``skillbook``."""
    from ..distributed.producer.fleet_check import require_workers as require_recipe_workers

    require_recipe_workers(service.dispatcher, recipe, skillbook)


@contextmanager
def open_service(settings: WorkerSettings, *, run_workers: bool, learn_threads: int) -> Iterator[Service]:
    """The service on the settings' Redis (an embedded one if none is named), with workers if asked.

    Without workers of its own a command reads what others left in Redis: a fresh embedded
    Redis would hold nothing, so one is refused (require_shared_redis). Commands check it
    first, naming themselves, with redis_settings; this is the backstop.
    """
    from ..distributed.ops.embedded_redis import resolve_redis
    from ..distributed.service import build_service, local_workers

    if not run_workers:
        require_shared_redis(
            settings, "this command", "it reads what workers and other commands left in Redis"
        )
    with resolve_redis(settings) as (broker_url, redis_url):
        service = build_service(settings, redis_url=redis_url, broker_url=broker_url)
        try:
            if run_workers:
                with local_workers(service, learn_threads=learn_threads):
                    yield service
            else:
                yield service
        finally:
            service.close()


def store_or_fail(service: Service, name: str) -> Any:
    """The store of skillbook ``name``, else a usage error naming the skillbooks there are."""
    from ..distributed.store.store import list_skillbooks

    store = service.runtime.store(name)
    if not store.exists():
        known = (
            ", ".join(list_skillbooks(service.runtime.redis, service.runtime.settings.queue_prefix)) or "none"
        )
        raise typer.BadParameter(f"no skillbook named {name!r} in Redis (known: {known})")
    return store


def _inputs(path: Path, recipe: str) -> Any:
    """The checked inputs of ``path`` (inputs.py, with the core's sample types: loaded when sending)."""
    from .inputs import stream_inputs

    return stream_inputs(path, recipe)
