"""Everything in one process: the app, the runtime and in-process workers for the three queues.

Used by ``ace-workers learn`` when no Redis URL is configured (with an embedded
Redis), by the tests and by the benchmarks. The write queue always gets its
own worker with exactly one thread: skillbook writers never run concurrently.
"""

from __future__ import annotations

import logging
import os
import socket
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass

from celery import Celery, bootsteps
from celery.contrib.testing.worker import start_worker
from kombu.asynchronous import set_event_loop

from .ops.nightly import register_nightly_task
from .producer.producer import Producer
from .settings import WorkerSettings
from .worker.app import create_app, declare_broker_queues
from .worker.celery_dispatch import CeleryDispatcher
from .worker.deliveries import hold_deliveries_while_redis_is_full
from .worker.fleet import fleet_queues_step, fleet_shape_step
from .worker.runtime import WorkerRuntime
from .worker.task_logs import StepFailureTracebackFilter
from .worker.tasks import register_admit_task, register_reconcile_task, register_tasks

__all__ = ["Service", "build_service", "local_workers", "reset_event_loop"]

logger = logging.getLogger(__name__)


@dataclass
class Service:
    """A configured Celery app with the step task, its runtime, and a producer."""

    app: Celery
    runtime: WorkerRuntime
    producer: Producer

    @property
    def dispatcher(self) -> CeleryDispatcher:
        """What the fleet's scheduling sends through: this app, for this runtime."""
        return self.producer.dispatcher

    def close(self) -> None:
        """Release the Redis connections of the runtime and of the app's producer pool."""
        self.runtime.close()
        self.app.close()


def build_service(settings: WorkerSettings, *, redis_url: str, broker_url: str | None = None) -> Service:
    """Create the app on ``broker_url`` (default: ACE_BROKER_URL, else the Redis) and register its tasks."""
    app = create_app(settings, broker_url=broker_url, redis_url=redis_url)
    declare_broker_queues(app)
    runtime = WorkerRuntime(settings, redis_url)
    register_tasks(app, lambda: runtime)
    register_nightly_task(app, lambda: runtime)
    register_reconcile_task(app, lambda: runtime)
    register_admit_task(app, lambda: runtime)
    app.steps["worker"].add(fleet_shape_step(lambda: runtime))  # what shapes its recipes, for producers
    app.steps["consumer"].add(fleet_queues_step(lambda: runtime))  # and the queues it consumes, for status
    return Service(app, runtime, Producer(settings, app=app, runtime=runtime))


def reset_event_loop() -> None:
    """Forget kombu's process-wide event-loop hub.

    A worker adopts the global hub if one is set and closes it when it stops;
    clearing it makes every in-process worker create (and close) its own.
    """
    set_event_loop(None)


@contextmanager
def _own_hub() -> Iterator[None]:
    reset_event_loop()
    try:
        yield
    finally:
        reset_event_loop()


# How often an in-process worker looks up from waiting. Its stop is a flag read between polls,
# and closing its broker channel first waits for the pending fetch to return. kombu polls up to
# 10 s when no timer is due (an idle RabbitMQ worker took 5-10 s to stop) and a Redis fetch
# (BRPOP) waits 1 s; with this interval an in-process worker stops in a tenth of a second.
WAKE_UP_SECONDS = 0.1


class _WakeUp(bootsteps.StartStopStep):  # type: ignore[misc]  # celery has no types
    """A consumer step keeping the event loop's poll short: a stop is seen within ``WAKE_UP_SECONDS``."""

    requires = ("celery.worker.consumer.tasks:Tasks",)

    def start(self, c: object) -> None:
        timer = getattr(c, "timer", None)
        if timer is not None:
            timer.call_repeatedly(WAKE_UP_SECONDS, _nothing)


def _nothing() -> None:
    """The wake-up timer's callback: the wake-up itself is the point."""


@contextmanager
def _one_line_per_failed_sample() -> Iterator[None]:
    """While in-process workers run: Celery's line about a failed step comes without its traceback."""
    trace_logger = logging.getLogger("celery.app.trace")
    quiet = StepFailureTracebackFilter()
    trace_logger.addFilter(quiet)
    try:
        yield
    finally:
        trace_logger.removeFilter(quiet)


def _node_name(role: str) -> str:
    # Celery's test workers are all named gen<pid>@host; answers to `inspect` from two
    # workers of one name overwrite each other, so each gets a name of its own.
    return f"{role}-{os.getpid()}-{uuid.uuid4().hex[:6]}@{socket.gethostname()}"


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
    hold_deliveries_while_redis_is_full()  # a message taken from a full Redis is never dropped
    service.app.steps["consumer"].add(_WakeUp)
    # kombu's Redis transport takes its BRPOP timeout from the polling interval.
    options = service.app.conf.broker_transport_options or {}
    service.app.conf.broker_transport_options = {**options, "polling_interval": WAKE_UP_SECONDS}
    with ExitStack() as stack:
        stack.enter_context(_own_hub())
        stack.enter_context(_one_line_per_failed_sample())
        served_first = [queues["execute"], queues["learn"]] if serve_execute else [queues["learn"]]
        _start_in_thread(stack, service, served_first, learn_threads, "learn")
        for write_queue in served:  # one single-thread writer each
            reset_event_loop()  # each write worker gets a hub of its own
            role = write_queue.removeprefix(f"{settings.queue_prefix}.")
            _start_in_thread(stack, service, [write_queue], 1, role)
        yield service


def _start_in_thread(stack: ExitStack, service: Service, queues: list[str], threads: int, role: str) -> None:
    """A thread-pool worker of ``threads`` threads on ``queues``, running until ``stack`` closes."""
    stack.enter_context(
        start_worker(
            service.app,
            pool="threads",
            concurrency=threads,
            queues=queues,
            hostname=_node_name(role),
            perform_ping_check=False,
            loglevel="WARNING",
            shutdown_timeout=30.0,
            # No task events: nothing watches an in-process fleet (its Redis is usually the
            # embedded one, Flower's events need a fleet of its own), and each step would
            # publish three of them.
            task_events=False,
        )
    )
