"""Everything in one process: the app, the runtime and in-process workers for the three queues.

Used by ``ace-workers learn`` when no Redis URL is configured (with an embedded
Redis), by the tests and by the benchmarks. The write queue always gets its
own worker with exactly one thread: skillbook writers never run concurrently.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from .ops.nightly import run_nightly
from .producer.producer import Producer
from .settings import WorkerSettings
from .worker.app import CeleryApp, create_app, declare_broker_queues, register_tasks
from .worker.celery_dispatch import CeleryDispatcher
from .worker.celery_worker import InProcessWorker, add_fleet_record_step, thread_workers
from .worker.runtime import WorkerRuntime

__all__ = ["Service", "build_service", "local_workers"]

logger = logging.getLogger(__name__)


@dataclass
class Service:
    """A configured Celery app with the fleet's tasks, its runtime, its dispatcher, and a producer."""

    app: CeleryApp
    runtime: WorkerRuntime
    dispatcher: CeleryDispatcher
    producer: Producer

    def close(self) -> None:
        """Release the Redis connections of the runtime and of the app's producer pool."""
        self.runtime.close()
        self.dispatcher.close()


def build_service(settings: WorkerSettings, *, redis_url: str, broker_url: str | None = None) -> Service:
    """Create the app on ``broker_url`` (default: ACE_BROKER_URL, else the Redis) and register its tasks."""
    app = create_app(settings, broker_url=broker_url, redis_url=redis_url)
    declare_broker_queues(app)
    runtime = WorkerRuntime(settings, redis_url)
    register_tasks(app, lambda: runtime, nightly=run_nightly)
    add_fleet_record_step(app, lambda: runtime)  # what shapes its recipes, for producers
    dispatcher = CeleryDispatcher(app, runtime)
    return Service(app, runtime, dispatcher, Producer(settings, dispatcher=dispatcher))


@contextmanager
def local_workers(
    service: Service,
    *,
    learn_threads: int = 4,
    write_queues: list[str] | None = None,
    serve_execute: bool = True,
) -> Iterator[Service]:
    """Run thread-pool workers for the execute and learn queues and a one-thread worker per write queue.

    ``write_queues``: the write queues to serve (default: every partition's). Without
    ``serve_execute`` the execute queue has no worker (a fleet for trace recipes only).
    """
    settings = service.runtime.settings
    queues = settings.queue_names()
    served = settings.write_queues() if write_queues is None else write_queues
    service.runtime.check_reflector()  # an rr reflector that cannot run stops these workers here
    served_first = [queues["execute"], queues["learn"]] if serve_execute else [queues["learn"]]
    workers = [
        InProcessWorker("learn", served_first, learn_threads),
        # One single-thread writer per write queue: skillbook writers never run concurrently.
        *(
            InProcessWorker(write_queue.removeprefix(f"{settings.queue_prefix}."), [write_queue], 1)
            for write_queue in served
        ),
    ]
    with thread_workers(service.app, service.runtime, workers):
        yield service
