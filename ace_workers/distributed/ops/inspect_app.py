"""The Celery app of Celery's own command line: ``celery -A ace_workers.distributed.ops.inspect_app ...``.

Operators and health checks talk to the fleet with Celery's tools::

    celery -A ace_workers.distributed.ops.inspect_app inspect ping -d learn@$HOSTNAME
    celery -A ace_workers.distributed.ops.inspect_app inspect active_queues
    celery -A ace_workers.distributed.ops.inspect_app events

``app`` is built on first access, not at import (a module ``__getattr__``): ``celery -A``
imports this module and then asks for ``app``, and only then are the ``ACE_*`` variables
read, by :meth:`WorkerSettings.from_env` as everywhere else. Importing the module (a test,
a type checker, a docs build) reads nothing and connects nowhere. The app is
:func:`~..worker.app.build_cli_app`'s: configured exactly like the workers', so it speaks
to the same queues with the same serializers and timeouts.

Workers are started with ``ace-workers worker``, which checks the write queue's concurrency
and the serializers first. ``celery -A ... worker`` on this app refuses to start: it has no
step task registered, and a worker without it would discard every step message it took.
"""

from __future__ import annotations

import functools
from typing import Any

from ..settings import WorkerSettings
from ..worker.app import CeleryApp, build_cli_app

__all__ = ["build_cli_app"]


@functools.cache
def _app() -> CeleryApp:
    return build_cli_app(WorkerSettings.from_env())


def __getattr__(name: str) -> Any:
    # PEP 562: `app` (the name `celery -A` looks up) is built on first access, from the environment.
    if name == "app":
        return _app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
