"""The Celery app of producers and workers, configured so that no task is silently lost, and its tasks.

Every reliability choice is one line of :func:`celery_config` with its reason;
:func:`check_app_security` and :func:`check_write_concurrency` are the checks a
worker runs before it starts, and :func:`ping_redis` turns a Redis that is down
into a clear error within a few seconds instead of a hang.

:func:`register_tasks` registers the fleet's tasks; each is a thin wrapper of a project
function (tasks.py, reconcile, nightly) and turns the project's :class:`StepOutcome`
into Celery's answer: ``Ignore``, ``Reject`` (requeue) or a retry.
"""

from __future__ import annotations

import logging
import re
import ssl
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NoReturn, TypeAlias
from urllib.parse import parse_qsl, urlsplit

from billiard import common as billiard_common
from celery import Celery, Task, bootsteps
from celery.exceptions import Ignore, Reject
from kombu.entity import Exchange, Queue

from ..connections import broker_url_for, is_amqp
from ..errors import InvalidSettingError
from ..settings import WorkerSettings, env_name
from .celery_dispatch import WORKER_PUBLISH_RETRY_POLICY, CeleryDispatcher, broker_errors
from .delivery import StepDelivery
from .dispatch import Dispatcher
from .errors import (
    NotAWorkerApp,
    StepDropped,
    StepRequeued,
    StepRetry,
    UnsafeSerializerError,
    WriteConcurrencyError,
)

# Re-exported: the CLI imports these from here (they live in redis_health.py).
from .redis_health import is_redis_full, ping_redis, wait_while_redis_is_full
from .retention import sweep_fleet_retention
from .runtime import WorkerRuntime
from .task_names import ADMIT_TASK, NIGHTLY_TASK, RECONCILE_TASK, RETENTION_TASK, STEP_TASK
from .tasks import REDIS_OUTAGE, admit_batch, handle_step, reconcile_fleet, wait_for_room

__all__ = [
    # the app
    "CeleryApp",
    "create_app",
    "celery_config",
    "declare_queues",
    "declare_broker_queues",
    "tls_config",
    "connect_dispatcher",
    "build_cli_app",
    # its tasks
    "register_tasks",
    "process_is_stopping",
    # checks at worker start
    "check_app_security",
    "check_write_concurrency",
    "ping_redis",
    # Redis out of memory (redis_health.py)
    "is_redis_full",
    "wait_while_redis_is_full",
]

# What the rest of the project holds of a Celery app without importing Celery (Service.app).
CeleryApp: TypeAlias = Celery

logger = logging.getLogger(__name__)

# pickle runs arbitrary code on load: anyone who can write to the broker could run
# code on every worker. Celery names it by alias or by content type.
PICKLE_NAMES = frozenset({"pickle", "application/x-python-serialize"})
# kombu's own expiry of the lock its Redis transport sweeps abandoned messages under.
KOMBU_UNACKED_MUTEX_EXPIRE = 300

# Publishing a task retries this often, then raises: a producer never hangs on a dead broker.
PUBLISH_RETRY_POLICY: Mapping[str, float] = {
    "max_retries": 3,
    "interval_start": 0.0,
    "interval_step": 0.5,
    "interval_max": 1.0,
}


def create_app(
    settings: WorkerSettings, *, broker_url: str | None = None, redis_url: str | None = None
) -> Celery:
    """A Celery app: tasks on the broker, results in Redis.

    The broker is ``broker_url``, else ACE_BROKER_URL, else the Redis; the Redis is
    ``redis_url``, else ACE_REDIS_URL, else a Redis ``broker_url``. unix:// URLs are
    translated to the redis+socket:// form Celery needs.

    Raises:
        InvalidSettingError: no Redis is given.
    """
    redis_given = (
        redis_url or settings.redis_url or (broker_url if broker_url and not is_amqp(broker_url) else None)
    )
    if not redis_given:
        raise InvalidSettingError(
            env_name("redis_url"),
            redis_given,
            "no Redis to connect to: set it, pass redis_url, or use resolve_redis() for an embedded Redis",
        )
    redis = broker_url_for(redis_given)
    broker = broker_url_for(broker_url or settings.broker_url or redis)
    # Not the current/default app: a library should not change Celery's process-wide state.
    app = Celery("ace_workers", broker=broker, backend=redis, set_as_current=False)
    app.conf.update(celery_config(settings))
    app.conf.update(broker_config(settings, broker))
    app.conf.update(tls_config(redis))
    return app


def broker_config(settings: WorkerSettings, broker: str) -> dict[str, Any]:
    """What differs between a RabbitMQ and a Redis broker: queue kinds, delivery guarantees.

    RabbitMQ: quorum queues (replicated, durable), publisher confirms, and the write
    queue single-active-consumer, so a second writer started by mistake stands by
    instead of writing alongside. Topic exchanges, because Celery's delayed delivery
    on quorum queues (retry countdowns) cannot bind direct ones. Redis: the
    visibility timeout after which an unacknowledged task comes back.
    """
    if is_amqp(broker):
        return {
            "task_queues": declare_queues(settings, quorum=True),
            "task_default_exchange_type": "topic",
            "broker_transport_options": {"confirm_publish": True},
        }
    visibility = settings.visibility_timeout_seconds
    return {
        "task_queues": declare_queues(settings),
        "task_default_exchange_type": "direct",
        # Redelivery: an unacknowledged task comes back after the visibility timeout, which
        # must exceed the slowest step (WorkerSettings checks it); the same value everywhere.
        "broker_transport_options": {
            "visibility_timeout": visibility,
            # kombu sweeps for abandoned messages every interval x throttle seconds (100 s by
            # default, whatever the timeout): sweep every quarter timeout, at most every 10 s.
            "unacked_restore_interval": min(10, max(1, visibility // 4)),
            "unacked_restore_throttle": 1,
            # One worker sweeps at a time, under a lock; a worker killed while sweeping holds it
            # until it expires (kombu: 300 s), and no sweep runs. Expire it with the timeout.
            "unacked_mutex_expire": min(visibility, KOMBU_UNACKED_MUTEX_EXPIRE),
            "socket_connect_timeout": settings.redis_connect_timeout_seconds,
            "socket_timeout": settings.redis_socket_timeout_seconds,
            "retry_on_timeout": True,
        },
    }


def declare_broker_queues(app: Celery) -> None:
    """Declare the queues, their exchanges and bindings on a RabbitMQ broker now (idempotent).

    A worker binds every queue to RabbitMQ's delayed-delivery exchanges when it starts (retry
    countdowns on quorum queues); an exchange not declared yet would disable that for it.
    """
    if not is_amqp(str(app.conf.broker_url)):
        return
    with broker_errors("declare the queues on the broker"), app.connection_for_write() as connection:
        channel = connection.default_channel
        for queue in app.conf.task_queues:
            queue(channel).declare()


def tls_config(url: str) -> dict[str, Any]:
    """TLS settings of broker and result backend for a rediss:// ``url``: verify certificates.

    Celery's result backend refuses a rediss:// URL without ``ssl_cert_reqs``, and
    kombu's broker then connects without checking the server's certificate. Both get
    CERT_REQUIRED, as redis-py's own clients of the same URL do; an ``ssl_cert_reqs``
    in the URL is the user's choice and wins (both read it from the URL).
    """
    parts = urlsplit(url)
    if parts.scheme != "rediss" or "ssl_cert_reqs" in dict(parse_qsl(parts.query)):
        return {}
    verify = {"ssl_cert_reqs": ssl.CERT_REQUIRED}
    return {"broker_use_ssl": dict(verify), "redis_backend_use_ssl": dict(verify)}


# One consumer at a time takes from the write queue; the others stand by.
_SINGLE_CONSUMER = {"x-single-active-consumer": True}


def declare_queues(settings: WorkerSettings, *, quorum: bool = False) -> tuple[Queue, ...]:
    """The execute, learn and write queues (each write partition's), on exchanges of their own names.

    ``quorum`` (RabbitMQ): quorum queues on topic exchanges, each write queue single-active-consumer.
    """
    names = settings.all_queues()
    if not quorum:
        return tuple(Queue(name, Exchange(name, type="direct"), routing_key=name) for name in names)
    writes = set(settings.write_queues())
    return tuple(
        Queue(
            name,
            Exchange(name, type="topic"),
            routing_key=name,
            queue_arguments={"x-queue-type": "quorum", **(_SINGLE_CONSUMER if name in writes else {})},
        )
        for name in names
    )


def celery_config(settings: WorkerSettings) -> dict[str, Any]:
    """The Celery settings :func:`create_app` applies whatever the broker (see :func:`broker_config`)."""
    queues = settings.queue_names()
    visibility = settings.visibility_timeout_seconds
    connect_timeout = settings.redis_connect_timeout_seconds
    socket_timeout = settings.redis_socket_timeout_seconds
    retries = settings.redis_connect_retries
    return {
        # JSON only: never pickle (see check_app_security).
        "task_serializer": "json",
        "result_serializer": "json",
        "event_serializer": "json",
        "accept_content": ["json"],
        "result_accept_content": ["json"],
        # Acknowledge after the task ran, and put a task back if its worker died:
        # a killed worker's task is delivered again, never lost.
        "task_acks_late": True,
        "task_reject_on_worker_lost": True,
        # A lost broker connection cancels running late-ack tasks: they are redelivered anyway,
        # and cancelling stops the old run from racing the new one (Celery 6's default).
        "worker_cancel_long_running_tasks_on_connection_loss": True,
        # A redelivered task whose result already says SUCCESS is not run again.
        "worker_deduplicate_successful_tasks": True,
        # One reserved message per slot: a slow LLM step never holds tasks another worker could run.
        "worker_prefetch_multiplier": 1,
        "task_track_started": True,
        # Monitoring: workers send task events, so Flower and `celery events` show every step as
        # it is received, started and finished (on Redis an event is one PUBLISH, dropped when
        # nobody listens). No task-sent events: Celery names those after the task ("ace.step"),
        # not the step it runs, and one arriving late renames the step in Flower. Queue depth is
        # on Flower's Broker page.
        "worker_send_task_events": True,
        "task_send_sent_event": False,
        "worker_hijack_root_logger": False,
        # Queues: three, declared (broker_config); routing to an undeclared name fails instead of
        # filling a queue no worker reads.
        "task_default_queue": queues["execute"],
        "task_default_exchange": queues["execute"],
        "task_default_routing_key": queues["execute"],
        "task_create_missing_queues": False,
        "result_backend_transport_options": {
            "visibility_timeout": visibility,
            "retry_policy": {
                "max_retries": retries,
                "interval_start": 0,
                "interval_step": 0.5,
                "interval_max": 1,
            },
        },
        # A Redis that is down is an error within seconds, not an endless wait.
        "broker_connection_retry_on_startup": True,
        "broker_connection_max_retries": retries,
        "broker_connection_timeout": connect_timeout,
        "task_publish_retry": True,
        "task_publish_retry_policy": dict(PUBLISH_RETRY_POLICY),
        "redis_socket_connect_timeout": connect_timeout,
        "redis_socket_timeout": socket_timeout,
        "redis_retry_on_timeout": True,
        "result_backend_always_retry": True,
        "result_backend_max_retries": retries,
        "result_expires": settings.result_ttl_seconds,
    }


def check_app_security(app: Any) -> None:
    """Raise UnsafeSerializerError if ``app`` writes or accepts pickle; a worker calls it before it starts."""
    conf = app.conf
    offending: dict[str, object] = {}
    for name in ("task_serializer", "result_serializer", "event_serializer"):
        value = conf.get(name)
        if isinstance(value, str) and value.lower() in PICKLE_NAMES:
            offending[name] = value
    for name in ("accept_content", "result_accept_content"):
        # result_accept_content falls back to accept_content when unset (None).
        accepted = conf.get(name) or ()
        if any(isinstance(item, str) and item.lower() in PICKLE_NAMES for item in accepted):
            offending[name] = list(accepted)
    if offending:
        raise UnsafeSerializerError(offending)


# A write queue's name when the full names are not given: "write", "P.write" or "P.write.K".
_WRITE_QUEUE = re.compile(r"(^|\.)write(\.\d+)?$")


def check_write_concurrency(
    queues: Iterable[str],
    concurrency: int,
    force: bool = False,
    *,
    write_queues: Iterable[str] | None = None,
) -> None:
    """Refuse a worker that would serve a write queue with more than one slot, unless ``force``.

    ``write_queues`` are the write queues' full names (one per partition); without
    them, ``"write"`` and any name ending in ``".write"`` or ``".write.K"`` count as one.

    Raises:
        ValueError: ``concurrency`` is below 1.
        WriteConcurrencyError: the write queue is among ``queues`` and ``concurrency`` > 1.
    """
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ValueError(f"concurrency must be an int of at least 1, got {concurrency!r}")
    writes = set(write_queues) if write_queues is not None else None
    for queue in queues:
        is_write = queue in writes if writes is not None else _WRITE_QUEUE.search(queue) is not None
        if not is_write or concurrency == 1:
            continue
        if not force:
            raise WriteConcurrencyError(queue, concurrency)
        logger.warning(
            "serving the write queue %s with concurrency %d (forced): skillbook writes may conflict",
            queue,
            concurrency,
        )


def connect_dispatcher(
    settings: WorkerSettings, runtime: WorkerRuntime, *, redis_url: str
) -> CeleryDispatcher:
    """A dispatcher on an app of its own (a producer's; the broker: ACE_BROKER_URL, else ``redis_url``).

    Its owner closes it (:meth:`CeleryDispatcher.close`) to release the app's connections.
    """
    return CeleryDispatcher(create_app(settings, redis_url=redis_url), runtime)


# -- the fleet's tasks --------------------------------------------------------------------------------

# A nightly run as ``ace.nightly`` calls it: (dispatcher, skillbook, scheduled) -> the run's report.
NightlyRun = Callable[[Dispatcher, str, bool], "dict[str, Any] | None"]


def register_tasks(
    app: Celery, get_runtime: Callable[[], WorkerRuntime], *, nightly: NightlyRun | None = None
) -> Task:
    """Register ``ace.step``, ``ace.admit``, ``ace.reconcile``, ``ace.retention`` (and ``ace.nightly``
    given ``nightly``) on ``app``; ``get_runtime`` returns the process's runtime. Returns the step task.

    shared=False: a task belongs to this app only, so several apps in one process never clash.
    ignore_result: a chain hands each result to the next task in the message, and outcomes live
    in the batch record, so storing results would only cost a Redis write (and, on failures, a
    pubsub connection per worker thread that Celery never closes).
    """
    options: dict[str, Any] = {"shared": False, "ignore_result": True}

    def step_task(self: Task, payload: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        runtime = get_runtime()
        try:
            return handle_step(
                CeleryDispatcher(self.app, runtime),
                _delivery_of(self),
                payload,
                kwargs,
                stopping=process_is_stopping,
            )
        except StepDropped:
            raise Ignore() from None  # acknowledged: neither failed nor retried
        except StepRequeued as requeued:
            raise Reject(requeued.reason, requeue=True) from requeued.reason
        except StepRetry as retry:
            _send_retry(self, runtime, retry)

    def admit_task(batch_id: object = None) -> int:
        return admit_batch(CeleryDispatcher(app, get_runtime()), batch_id)

    def reconcile_task() -> dict[str, Any]:
        return reconcile_fleet(CeleryDispatcher(app, get_runtime()))

    def retention_task() -> dict[str, int]:
        return sweep_fleet_retention(get_runtime())

    step: Task = app.task(name=STEP_TASK, bind=True, **options)(step_task)
    app.task(name=ADMIT_TASK, **options)(admit_task)
    app.task(name=RECONCILE_TASK, **options)(reconcile_task)
    app.task(name=RETENTION_TASK, **options)(retention_task)
    if nightly is not None:
        run_nightly = nightly

        def nightly_task(skillbook: str, scheduled: bool = True) -> dict[str, Any] | None:
            return run_nightly(CeleryDispatcher(app, get_runtime()), skillbook, scheduled)

        app.task(name=NIGHTLY_TASK, **options)(nightly_task)
    return step


def _delivery_of(task: Task) -> StepDelivery:
    """What the step's code reads of Celery's request: ids, retries, this worker, the queue."""
    request = task.request
    delivery = getattr(request, "delivery_info", None)
    # Each queue is bound by its own name, so the routing key is the queue.
    queue = delivery.get("routing_key") if isinstance(delivery, Mapping) else None
    return StepDelivery(
        task_id=str(request.id),
        retries=int(request.retries or 0),
        hostname=request.hostname or "",
        queue=queue if isinstance(queue, str) else None,
        amqp=is_amqp(str(task.app.conf.broker_url)),
    )


def _send_retry(task: Task, runtime: WorkerRuntime, retry: StepRetry) -> NoReturn:
    """Celery's retry of the step (this message is acknowledged), waiting while a full Redis refuses it."""
    waits = 0
    try:
        while True:
            try:
                # max_retries: Celery's own cap (3 by default) would otherwise re-raise the error
                # from inside retry() on the 4th retry, past our give-up path: a lost sample.
                raise task.retry(
                    exc=retry.error,
                    countdown=retry.countdown,
                    max_retries=retry.max_retries,
                    retry_policy=dict(WORKER_PUBLISH_RETRY_POLICY),
                ) from retry.error
            except Reject as refused:
                # Celery rejects for good a retry it could not publish: not when Redis is only full.
                if not is_redis_full(refused.reason):
                    raise
            waits += 1
            wait_for_room(runtime, waits)
    except REDIS_OUTAGE as lost:
        # The retry could not be written: acknowledged now, the sample would have no outcome.
        raise Reject(lost, requeue=True) from retry.error


def process_is_stopping() -> bool:
    """True once this process handled a signal to stop: a prefork pool child sent SIGTERM.

    billiard's handler in a pool child raises ``SystemExit(-241)`` inside whatever step
    runs, and sets a flag first: what the step raises then (that SystemExit, or an error
    of its cleanup) is the shutdown's, not the step's. Nothing else stops a step from
    outside: Celery's own handlers (threads and solo pools) only set a flag its consumer
    loop reads, so a running step finishes. A KeyboardInterrupt or SystemExit raised while
    this answers False is the step's own, and fails its sample.
    """
    fired = getattr(billiard_common, "terminate_handler_fired", None)
    if fired is not None:
        return bool(fired())
    return bool(billiard_common._should_have_exited[0])  # billiard before 4.3: the same flag


# -- the app of Celery's own tools ----------------------------------------------------------------


class _RefuseWorker(bootsteps.StartStopStep):  # type: ignore[misc]  # celery has no types
    """A worker bootstep that stops a worker of the tools' app before it consumes anything."""

    def __init__(self, parent: Any, **kwargs: Any) -> None:
        raise NotAWorkerApp(
            "ace_workers.distributed.ops.inspect_app is for inspect, control, events and Flower; it has no "
            "step task, so a worker on it would discard step messages. Start workers with 'ace-workers "
            "worker --queues execute,learn' and 'ace-workers worker --queues write --concurrency 1'."
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
