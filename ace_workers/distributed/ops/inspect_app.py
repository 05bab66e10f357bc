"""The Celery app of Celery's own command line: ``celery -A ace_workers.distributed.ops.inspect_app ...``.

Operators and health checks talk to the fleet with Celery's tools::

    celery -A ace_workers.distributed.ops.inspect_app inspect ping -d learn@$HOSTNAME
    celery -A ace_workers.distributed.ops.inspect_app inspect active_queues
    celery -A ace_workers.distributed.ops.inspect_app events

``app`` is built on first access, not at import (a module ``__getattr__``): ``celery -A``
imports this module and then asks for ``app``, and only then are the ``ACE_*`` variables
read, by :meth:`WorkerSettings.from_env` as everywhere else. Importing the module (a test,
a type checker, a docs build) reads nothing and connects nowhere. The app is configured
exactly like the workers' (:func:`create_app`), so it speaks to the same queues with the
same serializers and timeouts.

Workers are started with ``ace-workers worker``, which checks the write queue's concurrency
and the serializers first. ``celery -A ... worker`` on this app refuses to start: it has no
step task registered, and a worker without it would discard every step message it took.
"""

from __future__ import annotations

import functools
from typing import Any

from celery import Celery, bootsteps

from ..settings import WorkerSettings
from ..worker.app import check_app_security, create_app
from .errors import NotAWorkerApp

__all__ = ["build_cli_app"]


class _RefuseWorker(bootsteps.StartStopStep):  # type: ignore[misc]
    """A worker bootstep that stops a worker of this app before it consumes anything."""

    def __init__(self, parent: Any, **kwargs: Any) -> None:
        raise NotAWorkerApp(
            "ace_workers.distributed.ops.inspect_app is for inspect, control, events and Flower; it has no "
            "step task, so a worker on it would discard step messages. Start workers with "
            "'ace-workers worker --queues execute|learn|write'."
        )


def build_cli_app(settings: WorkerSettings) -> Celery:
    """The app of ``celery -A`` and ``ace-workers flower``: the workers' configuration, no tasks.

    Raises:
        InvalidSettingError: ``settings.redis_url`` is not set (a fleet's tools need its Redis).
        UnsafeSerializerError: the configuration would accept pickle.
    """
    app = create_app(settings)
    check_app_security(app)
    app.steps["worker"].add(_RefuseWorker)
    return app


@functools.cache
def _app() -> Celery:
    return build_cli_app(WorkerSettings.from_env())


def __getattr__(name: str) -> Any:
    # PEP 562: `app` (the name `celery -A` looks up) is built on first access, from the environment.
    if name == "app":
        return _app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
