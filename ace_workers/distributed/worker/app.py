"""The Celery app of producers and workers, configured so that no task is silently lost.

Every reliability choice is one line of :func:`celery_config` with its reason;
:func:`check_app_security` and :func:`check_write_concurrency` are the checks a
worker runs before it starts, and :func:`ping_redis` turns a Redis that is down
into a clear error within a few seconds instead of a hang.
"""

from __future__ import annotations

import logging
import re
import ssl
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar
from urllib.parse import parse_qsl, urlsplit

import redis
from celery import Celery
from kombu.entity import Exchange, Queue
from redis.backoff import NoBackoff
from redis.exceptions import ExecAbortError
from redis.retry import Retry

from ..connections import broker_url_for, client_url_for, is_amqp
from ..errors import InvalidSettingError
from ..settings import WorkerSettings, env_name
from ..store.keys import DEFAULT_PREFIX, write_probe_key
from .errors import UnsafeSerializerError, WriteConcurrencyError
from .redis_health import is_redis_full, ping_redis

__all__ = [
    # the app
    "create_app",
    "celery_config",
    "declare_queues",
    "tls_config",
    "WORKER_PUBLISH_RETRY_POLICY",
    # checks at worker start
    "check_app_security",
    "check_write_concurrency",
    "ping_redis",
    # Redis out of memory
    "is_redis_full",
    "redis_out_of_memory",
    "when_redis_has_room",
    "refuses_writes",
    "wait_while_redis_is_full",
]

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

# What a worker publishes (a chain's next step, a step's retry) retries for about 35 s: a
# Redis restart takes seconds, and a worker that gives up has already run its step, so the
# task fails, its message is acknowledged and the sample is lost without a trace.
WORKER_PUBLISH_RETRY_POLICY: Mapping[str, float] = {
    "max_retries": 20,
    "interval_start": 0.0,
    "interval_step": 0.5,
    "interval_max": 2.0,
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
    with app.connection_for_write() as connection:
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


# The longest wait between two looks at a Redis that is out of memory.
MAX_MEMORY_WAIT_SECONDS = 30.0


def redis_out_of_memory(url: str, timeout: float = 3.0, *, prefix: str = DEFAULT_PREFIX) -> bool:
    """True if the Redis at ``url`` refuses writes because it reached its maxmemory (noeviction).

    It tries one write, of a key under ``prefix`` (ACE_QUEUE_PREFIX) that expires in a second.
    """
    client = redis.Redis.from_url(
        client_url_for(url),
        socket_connect_timeout=timeout,
        socket_timeout=timeout,
        retry=Retry(NoBackoff(), 0),
    )
    try:
        return refuses_writes(client, prefix=prefix)
    finally:
        client.close()


def refuses_writes(client: Any, *, prefix: str = DEFAULT_PREFIX) -> bool:
    """True if Redis (``client``'s, a server or a cluster) is out of memory: one probing write is refused.

    Connection errors are raised: a Redis that is down is not full.
    """
    try:
        # A MULTI, like kombu's own commands: what a worker starting now would meet.
        pipe = client.pipeline()
        pipe.set(write_probe_key(uuid.uuid4().hex, prefix), 1, px=1000)
        pipe.execute()
    except (redis.OutOfMemoryError, ExecAbortError) as exc:
        return is_redis_full(exc)
    return False


T = TypeVar("T")


def when_redis_has_room(call: Callable[[], T], pause: Callable[[int], None], what: str) -> T:
    """``call()``, called again after ``pause(refusals)`` each time a full Redis refuses it.

    A refused command wrote nothing (nor did a refused MULTI), so calling it again is safe.
    ``what`` names the call in the log. Any other error is raised.
    """
    refusals = 0
    while True:
        try:
            return call()
        except redis.ResponseError as exc:
            if not is_redis_full(exc):
                raise
        refusals += 1
        logger.warning("Redis is out of memory: %s waits for room (refused %d time(s))", what, refusals)
        pause(refusals)


def wait_while_redis_is_full(
    url: str, on_wait: Callable[[str], None] | None = None, *, prefix: str = DEFAULT_PREFIX
) -> float:
    """Block while the Redis at ``url`` is out of memory, looking again with a growing backoff.

    ``on_wait`` hears what is waited for (the worker shows it on /healthz); returns the seconds waited.
    ``prefix`` is the key prefix of the probing write (:func:`redis_out_of_memory`).
    """
    waited, delay = 0.0, 1.0
    while redis_out_of_memory(url, prefix=prefix):
        problem = f"Redis is out of memory (maxmemory); the worker waits for room, next look in {delay:.0f} s"
        logger.warning("%s", problem)
        if on_wait is not None:
            on_wait(problem)
        time.sleep(delay)
        waited += delay
        delay = min(2 * delay, MAX_MEMORY_WAIT_SECONDS)
    return waited
