"""A worker's start-up on Celery: its hookups to Celery's signals and bootsteps, and where it runs.

Two ways a worker runs, both the same Celery ``WorkController`` with the same hookups:

- ``ace-workers worker``: one worker is the process (:func:`run_worker_until_signalled`);
- in-process workers in threads (:func:`thread_workers`), behind ``learn``, the tests and the
  benchmarks: thread pools, one single-thread writer per write queue, no task events, and a
  short wake-up so each stops within about :data:`WAKE_UP_SECONDS`.

Each hookup is thin: it reads what Celery hands it and calls the project's function, which
lives where its concern does (fleet records in fleet.py, log context in task_logs.py, the
consumption watchdog in health.py, span flushing in trace_context.py, a delivery held while
Redis is full in deliveries.py).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any, TextIO

import redis
from celery import Celery, bootsteps, signals
from celery.exceptions import WorkerShutdown
from celery.worker import WorkController
from kombu.asynchronous import set_event_loop
from kombu.transport import redis as kombu_redis

from ...observability.logs import configure_logging
from .deliveries import record_delivery_when_there_is_room
from .errors import WorkerError
from .fleet import REFRESH_SECONDS, announce_worker, withdraw_worker
from .health import ConsumptionWatchdog
from .redis_health import redis_out_of_memory, wait_while_redis_is_full
from .runtime import WorkerRuntime
from .task_logs import StepFailureTracebackFilter, enter_task_lines, filter_task_lines, leave_task_lines
from .trace_context import flush_spans

__all__ = [
    "WAKE_UP_SECONDS",
    "InProcessWorker",
    "add_fleet_record_step",
    "flush_spans_at_worker_shutdown",
    "hold_deliveries_while_redis_is_full",
    "reset_event_loop",
    "run_worker_until_signalled",
    "tag_task_lines",
    "thread_workers",
    "use_worker_logging",
    "write_spend_at_worker_shutdown",
]

logger = logging.getLogger(__name__)

# -- signal hookups ------------------------------------------------------------------------------------


def use_worker_logging(log_format: str, loglevel: int | str, stream: TextIO | None = None) -> None:
    """Configure logging as ``log_format`` (to ``stream``, default stderr) and keep Celery from replacing it.

    Celery's worker configures logging itself unless a receiver is connected to its
    ``setup_logging`` signal. Only for a process that runs a worker: the signal is process-wide.
    """
    configure_logging(log_format, loglevel, stream=stream)
    signals.setup_logging.connect(leave_logging_alone, weak=False)


def leave_logging_alone(**kwargs: Any) -> None:
    """Connected to ``setup_logging``: that a receiver exists is what stops Celery; nothing to do."""


def flush_spans_at_worker_shutdown() -> None:
    """Export buffered spans when a worker (or a prefork child) shuts down."""
    signals.worker_shutdown.connect(flush_spans, weak=False, dispatch_uid="ace.flush_spans")
    signals.worker_process_shutdown.connect(flush_spans, weak=False, dispatch_uid="ace.flush_spans.child")


# Where the prerun hookup leaves the token of the log context it entered, for postrun to leave it.
_TOKEN_ATTRIBUTE = "ace_log_context_token"


def tag_task_lines() -> None:
    """Tag Celery's lines about step tasks with the step and cut payloads off them; once per process.

    ``task_prerun`` and ``task_postrun`` are sent on the thread that runs the task, around it and
    around Celery's own lines about its outcome (see task_logs.py).
    """
    # dispatch_uid: connected once however many workers a process starts.
    signals.task_prerun.connect(_enter_task, weak=False, dispatch_uid="ace.task_logs.enter")
    signals.task_postrun.connect(_leave_task, weak=False, dispatch_uid="ace.task_logs.leave")
    filter_task_lines()


def _enter_task(task: Any = None, kwargs: Any = None, **_: Any) -> None:
    if task is None:
        return
    token = enter_task_lines(task.name, getattr(task.request, "shadow", None), kwargs)
    if token is not None:
        setattr(task.request, _TOKEN_ATTRIBUTE, token)


def _leave_task(task: Any = None, **_: Any) -> None:
    request = getattr(task, "request", None)
    token = getattr(request, _TOKEN_ATTRIBUTE, None)
    if token is not None:
        delattr(request, _TOKEN_ATTRIBUTE)
        leave_task_lines(token)


@contextmanager
def _watched_by(watchdog: ConsumptionWatchdog, app: Celery) -> Iterator[None]:
    """Tell ``watchdog`` of each task of ``app`` received, started and finished, while inside."""

    def received(sender: Any = None, request: Any = None, **_: Any) -> None:
        if getattr(sender, "app", None) is app:
            watchdog.note_delivery(_routing_key(request))

    def ran(sender: Any = None, task: Any = None, **_: Any) -> None:
        if getattr(task or sender, "app", None) is app:
            watchdog.note_delivery(_routing_key(getattr(task, "request", None)))

    signals.task_received.connect(received, weak=False)
    signals.task_prerun.connect(ran, weak=False)
    signals.task_postrun.connect(ran, weak=False)
    try:
        yield
    finally:
        signals.task_received.disconnect(received)
        signals.task_prerun.disconnect(ran)
        signals.task_postrun.disconnect(ran)


def _routing_key(request: Any) -> object:
    """The routing key a task request came with: its queue's name (each queue is bound by its own)."""
    return (getattr(request, "delivery_info", None) or {}).get("routing_key")


# -- the transport: a delivery taken from a full Redis is held, not dropped ---------------------------


def hold_deliveries_while_redis_is_full() -> None:
    """Make kombu's Redis transport in this process wait for room to record a delivery (idempotent).

    A worker calls it before it consumes (see deliveries.py).
    """
    append: Any = kombu_redis.QoS.append  # kombu leaves it unannotated
    if getattr(append, "holds_while_full", False):
        return

    def append_when_there_is_room(qos: Any, message: Any, delivery_tag: str) -> Any:
        return record_delivery_when_there_is_room(lambda: append(qos, message, delivery_tag), delivery_tag)

    append_when_there_is_room.holds_while_full = True  # type: ignore[attr-defined]
    kombu_redis.QoS.append = append_when_there_is_room  # type: ignore[method-assign]


# -- bootsteps ----------------------------------------------------------------------------------------


def add_fleet_record_step(app: Celery, get_runtime: Callable[[], WorkerRuntime]) -> None:
    """Give ``app``'s workers the fleet record (fleet.py): published at start and every
    REFRESH_SECONDS with the queues the worker consumes, removed at stop, so producers can compare
    settings before they send and ``status`` can tell who serves a queue from Redis alone."""

    def announce(worker: Any) -> None:
        runtime = get_runtime()
        announce_worker(runtime, worker.hostname, _consumed_queues(worker))
        # A worker that runs no step holds the spend of its last calls: written on this beat, so
        # an idle worker's spend shows within REFRESH_SECONDS (a busy one's rides with its steps).
        write_spend(runtime)

    class FleetRecordStep(bootsteps.StartStopStep):  # type: ignore[misc]  # celery has no types
        requires = ("celery.worker.components:Timer",)

        def __init__(self, worker: Any, **kwargs: Any) -> None:
            super().__init__(worker, **kwargs)
            self._timer: Any = None

        def start(self, worker: Any) -> None:
            announce(worker)
            self._timer = worker.timer.call_repeatedly(REFRESH_SECONDS, announce, (worker,), priority=10)

        def stop(self, worker: Any) -> None:
            if self._timer is not None:
                self._timer.cancel()
            withdraw_worker(get_runtime(), worker.hostname)

        # A cold shutdown terminates the steps instead.
        terminate = stop

    class FleetQueuesStep(bootsteps.StartStopStep):  # type: ignore[misc]  # celery has no types
        """Publish the record again once the consumer consumes its queues (the worker step above
        runs before it has them)."""

        requires = ("celery.worker.consumer.tasks:Tasks",)

        def start(self, consumer: Any) -> None:
            announce(consumer.controller)

    app.steps["worker"].add(FleetRecordStep)
    app.steps["consumer"].add(FleetQueuesStep)


def _consumed_queues(worker: Any) -> list[str]:
    """The names of the queues ``worker`` consumes now; none before its consumer started."""
    task_consumer = getattr(getattr(worker, "consumer", None), "task_consumer", None)
    return [queue.name for queue in getattr(task_consumer, "queues", None) or ()]


# How often an in-process worker looks up from waiting. kombu polls up to 10 s when no timer is
# due (an idle RabbitMQ worker took 5-10 s to stop) and a Redis fetch (BRPOP) waits 1 s; with this
# interval an in-process worker sees its stop within a tenth of a second.
WAKE_UP_SECONDS = 0.1


class _WakeUp(bootsteps.StartStopStep):  # type: ignore[misc]  # celery has no types
    """A consumer step keeping the event loop's poll short, and ending it when its worker is asked to stop.

    The stop is raised on the worker's own thread, from its event loop, as Celery's own shutdown
    flag is (``WorkerShutdown``): the worker then stops warm, as on SIGTERM, finishing its tasks.
    A flag per worker rather than Celery's process-wide one: one in-process fleet stops, not all.
    """

    requires = ("celery.worker.consumer.tasks:Tasks",)

    def start(self, c: Any) -> None:
        timer = getattr(c, "timer", None)
        stop = getattr(c.controller, "stop_requested", None)
        if timer is not None and stop is not None:
            timer.call_repeatedly(WAKE_UP_SECONDS, _stop_if_asked, (stop,))


def _stop_if_asked(stop: threading.Event) -> None:
    """The wake-up timer's callback: the wake-up itself is the point, and the stop if it was asked."""
    if stop.is_set():
        raise WorkerShutdown(0)


def write_spend_at_worker_shutdown(runtime: WorkerRuntime) -> None:
    """Write the tenants' spend no step carried yet (tenancy/spend_meter.py) when a worker (or a
    prefork child, which meters its own calls) shuts down."""

    def at_shutdown(**_: object) -> None:
        write_spend(runtime)

    signals.worker_shutdown.connect(at_shutdown, weak=False, dispatch_uid="ace.write_spend")
    signals.worker_process_shutdown.connect(at_shutdown, weak=False, dispatch_uid="ace.write_spend.child")


def write_spend(runtime: WorkerRuntime) -> None:
    """Write the spend ``runtime`` holds, if any, in a round trip of its own; a Redis error only warns."""
    try:
        runtime.spend_meter.flush(runtime.redis)
    except redis.RedisError as error:  # kept for the next try; the worker goes on (or stops) all the same
        logger.warning("the tenants' spend was not written: %s", error)


# -- the worker command -------------------------------------------------------------------------------


def run_worker_until_signalled(
    app: Celery,
    runtime: WorkerRuntime,
    argv: list[str],
    redis_url: str,
    watchdog: ConsumptionWatchdog,
) -> None:
    """Run the Celery worker of ``argv`` until a shutdown signal; start it again whenever it stops by itself.

    Celery stops a worker on an "unrecoverable error" and the process then exits 0, so a
    restart-on-failure supervisor would not even restart it. That happens when Redis refuses
    writes (out of memory), at start or later, and when a Redis restart breaks the connection
    at the wrong moment. This process waits while Redis is full (shown on /healthz), backs
    off, and starts the worker again; only a shutdown signal ends it.
    """
    signalled: list[str] = []

    def note_signal(sig: str = "", **_: object) -> None:
        signalled.append(sig)

    tag_task_lines()
    write_spend_at_worker_shutdown(runtime)
    if not runtime.settings.log_tracebacks:  # a failed step is one line (failure_logs.py)
        logging.getLogger("celery.app.trace").addFilter(StepFailureTracebackFilter())
    hold_deliveries_while_redis_is_full()  # a message taken from a full Redis is never dropped
    prefix = runtime.settings.queue_prefix
    signals.worker_shutting_down.connect(note_signal, weak=False)
    backoff = 1.0
    try:
        with _watched_by(watchdog, app):
            while True:
                wait_while_redis_is_full(redis_url, on_wait=watchdog.note_problem, prefix=prefix)
                started = time.monotonic()
                app.worker_main(argv)
                if signalled:
                    return
                if time.monotonic() - started > 60:
                    backoff = 1.0  # it ran a while: this stop is news, not a loop
                full = redis_out_of_memory(redis_url, prefix=prefix)
                cause = "Redis is out of memory" if full else "an unrecoverable error"
                logger.warning(
                    "the worker stopped by itself (%s); starting it again in %.0f s", cause, backoff
                )
                reset_event_loop()
                time.sleep(backoff)
                backoff = min(2 * backoff, 30.0)
    finally:
        signals.worker_shutting_down.disconnect(note_signal)


# -- in-process workers -------------------------------------------------------------------------------


def reset_event_loop() -> None:
    """Forget kombu's process-wide event-loop hub.

    A worker adopts the global hub if one is set (and sets its own as the global one), and
    closes it when it stops; clearing it before each worker is built gives each its own.
    """
    set_event_loop(None)


@dataclass(frozen=True)
class InProcessWorker:
    """One in-process worker: its ``role`` (in its node name), the ``queues`` it serves, its ``threads``."""

    role: str
    queues: Sequence[str]
    threads: int


class _ThreadWorker(WorkController):  # type: ignore[misc]  # celery has no types
    """Celery's worker, run on a thread of its own: says when it consumes, stops when asked."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.ready = threading.Event()
        self.stop_requested = threading.Event()  # read by _WakeUp on the worker's thread
        super().__init__(*args, **kwargs)

    def on_consumer_ready(self, consumer: Any) -> None:
        self.ready.set()


# How long stopping an in-process worker may take: its running steps finish first.
SHUTDOWN_SECONDS = 30.0


@contextmanager
def thread_workers(app: Celery, runtime: WorkerRuntime, workers: Sequence[InProcessWorker]) -> Iterator[None]:
    """Run ``workers`` on ``app`` in threads of this process, each consuming before this yields.

    Thread pools, no task events: nothing watches an in-process fleet (its Redis is usually
    the embedded one, Flower's events need a fleet of its own), and each step would publish
    three of them. No mingle, gossip or heartbeats, as for the worker command.
    """
    hold_deliveries_while_redis_is_full()  # a message taken from a full Redis is never dropped
    tag_task_lines()
    app.steps["consumer"].add(_WakeUp)
    # kombu's Redis transport takes its BRPOP timeout from the polling interval.
    options = app.conf.broker_transport_options or {}
    app.conf.broker_transport_options = {**options, "polling_interval": WAKE_UP_SECONDS}
    app.finalize()
    # The pool's threads run a task by its name on Celery's current app, which for a thread
    # other than this one is the process's default: the worker command (setup_worker_optimizations)
    # and Celery's own embedded workers set both, and so must these.
    app.set_current()
    app.set_default()
    with ExitStack() as stack:
        stack.callback(reset_event_loop)
        if not runtime.settings.log_tracebacks:
            stack.enter_context(_one_line_per_failed_sample())
        for worker in workers:
            stack.enter_context(_thread_worker(app, worker))
        yield


@contextmanager
def _thread_worker(app: Celery, spec: InProcessWorker) -> Iterator[_ThreadWorker]:
    """One worker on a thread, consuming; stopped warm (its steps finish) when the block ends."""
    reset_event_loop()  # each worker gets a hub of its own
    hostname = _node_name(spec.role)
    worker = _ThreadWorker(
        app=app,
        hostname=hostname,
        pool_cls="threads",
        concurrency=spec.threads,
        queues=list(spec.queues),
        loglevel="WARNING",
        task_events=False,
        without_heartbeat=True,
        without_mingle=True,
        without_gossip=True,
    )
    thread = threading.Thread(target=worker.start, name=f"celery-{spec.role}", daemon=True)
    thread.start()
    try:
        while not worker.ready.wait(0.05):
            if not thread.is_alive():
                raise WorkerError(
                    f"in-process worker {hostname} stopped before it consumed (see the log above)"
                )
        yield worker
    finally:
        worker.stop_requested.set()
        thread.join(SHUTDOWN_SECONDS)
        if thread.is_alive():
            raise WorkerError(f"in-process worker {hostname} did not stop within {SHUTDOWN_SECONDS:g} s")


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
    # Answers to `inspect` from two workers of one name overwrite each other: each gets its own.
    return f"{role}-{os.getpid()}-{uuid.uuid4().hex[:6]}@{socket.gethostname()}"
