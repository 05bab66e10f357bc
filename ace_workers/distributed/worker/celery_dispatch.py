"""The Celery dispatcher: chains of ``ace.step`` tasks, ``ace.admit`` hand-offs, and the broker's answers.

The one module scheduling goes through to reach Celery (see dispatch.py). kombu's
``OperationalError`` (a broker unreachable, or refusing commands) leaves it as
:class:`~.errors.BrokerUnavailable`.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from celery import Celery, chain
from kombu.exceptions import ChannelError, OperationalError

from .dispatch import SampleChain
from .errors import BrokerUnavailable
from .runtime import WorkerRuntime
from .task_names import ADMIT_TASK, STEP_TASK

__all__ = [
    "PAYLOAD_ARGSREPR",
    "WORKER_PUBLISH_RETRY_POLICY",
    "CeleryDispatcher",
    "broker_errors",
    "queue_consumers",
    "queue_depths",
    "tasks_done",
]

# What a worker publishes (a chain's next step, a step's retry) retries for about 35 s: a
# Redis restart takes seconds, and a worker that gives up has already run its step, so the
# task fails, its message is acknowledged and the sample is lost without a trace.
WORKER_PUBLISH_RETRY_POLICY: Mapping[str, float] = {
    "max_retries": 20,
    "interval_start": 0.0,
    "interval_step": 0.5,
    "interval_max": 2.0,
}

# What a step message shows of its arguments (Celery's ``argsrepr``: its headers, the task events
# Flower shows, the lines Celery logs): its payload is the sample's trace and the roles' outputs,
# and Celery would otherwise write a repr of its first KB at every hop, some 0.2 ms of CPU each.
PAYLOAD_ARGSREPR = "(<payload>,)"


class CeleryDispatcher:
    """Sends through ``app`` (a Celery app with the project's tasks and queues) for ``runtime``."""

    def __init__(self, app: Celery, runtime: WorkerRuntime) -> None:
        self.app = app
        self.runtime = runtime

    def send_chain(self, sample: SampleChain) -> None:
        signatures = []
        for position, step in enumerate(sample.steps):
            # Every step after the first is published by the worker that ran the one before it.
            options: dict[str, Any] = (
                {"retry_policy": dict(WORKER_PUBLISH_RETRY_POLICY)} if position > 0 else {}
            )
            signatures.append(
                self.app.signature(
                    STEP_TASK,
                    args=(sample.payload,) if position == 0 else (),
                    kwargs=step.kwargs,
                    queue=step.queue,
                    # Flower and the logs show the step's own name rather than the generic task.
                    shadow=f"ace.{step.step}",
                    argsrepr=PAYLOAD_ARGSREPR,
                    # No result is stored (the task ignores it), so nobody waits for one: without this
                    # the sender subscribes to every task's result channel, and a producer's memory
                    # grows with each sample it sends.
                    ignore_result=True,
                    **options,
                )
            )
        with broker_errors("send a sample's chain to the broker"):
            chain(*signatures).apply_async()

    def hand_off(self, batch_id: str, queue: str) -> None:
        with broker_errors("hand off admission through the broker"):
            self.app.signature(
                ADMIT_TASK,
                kwargs={"batch_id": batch_id},
                queue=queue,
                ignore_result=True,
                retry_policy=dict(WORKER_PUBLISH_RETRY_POLICY),
            ).apply_async()

    def queue_consumers(self, queues: Iterable[str], timeout: float) -> dict[str, list[str]]:
        with broker_errors("ask the broker which workers consume the queues"):
            return queue_consumers(self.app, queues, timeout)

    def queue_depths(self, queues: Iterable[str]) -> dict[str, int]:
        return queue_depths(self.app, queues)

    def tasks_done(self, workers: Iterable[str], timeout: float) -> dict[str, dict[str, int]]:
        with broker_errors("ask the workers what they have done"):
            return tasks_done(self.app, workers, timeout)

    def close(self) -> None:
        """Release the connections of the app's producer pool (for a dispatcher on an app of its own)."""
        self.app.close()


@contextmanager
def broker_errors(doing: str) -> Iterator[None]:
    """kombu's OperationalError, as the project's BrokerUnavailable (``doing`` says what failed)."""
    try:
        yield
    except OperationalError as exc:
        raise BrokerUnavailable(doing, exc) from exc


def queue_depths(app: Celery, queues: Iterable[str]) -> dict[str, int]:
    """Messages waiting in each queue (0 for one the broker does not know yet).

    Raises BrokerUnavailable when the broker cannot be asked, whatever the transport.
    """
    depths: dict[str, int] = {}
    with broker_errors("ask the broker"), app.connection_for_read() as connection:
        try:
            channel = connection.channel()
            for queue in queues:
                try:
                    depths[queue] = int(channel.queue_declare(queue=queue, passive=True).message_count)
                except ChannelError:
                    depths[queue] = 0
                    # An AMQP broker closes a channel on this error: ask the next queue on a fresh one.
                    channel = connection.channel()
        except (*connection.connection_errors, *connection.channel_errors) as exc:
            # Unreachable, or refusing commands (a Redis out of memory refuses even this MULTI).
            raise BrokerUnavailable("ask the broker", exc) from exc
    return depths


def tasks_done(app: Celery, workers: Iterable[str], timeout: float) -> dict[str, dict[str, int]]:
    """Each of ``workers``' task counts by task name (``inspect stats``), as many as answer in ``timeout``.

    Addressed to the workers by name with a reply limit, the broadcast ends once they all answered.
    """
    names = sorted(set(workers))
    if not names:
        return {}
    asked = app.control.inspect(destination=names, limit=len(names), timeout=timeout)
    replies = asked.stats() or {}
    return {
        worker: {str(task): int(count) for task, count in (stats.get("total") or {}).items()}
        for worker, stats in replies.items()
        if isinstance(stats, dict)
    }


def queue_consumers(app: Celery, wanted: Iterable[str], timeout: float) -> dict[str, list[str]]:
    """The workers consuming each queue, by queue name (a queue nobody serves is absent).

    A broadcast cannot know how many workers will answer, so one ``inspect`` always waits its
    whole timeout. This one asks in short rounds (0.1 s, then doubling) and stops once each
    ``wanted`` queue has a consumer: a command checking a live fleet answers in a fraction of
    a second, and waits ``timeout`` (ACE_WORKER_REPLY_SECONDS) only when some queue really has
    no worker.
    """
    wanted = set(wanted)
    deadline = time.monotonic() + timeout
    wait = 0.1 if wanted else timeout
    consumers: dict[str, set[str]] = {}
    while True:
        remaining = deadline - time.monotonic()
        replies = app.control.inspect(timeout=max(0.01, min(wait, remaining))).active_queues() or {}
        for worker, queues in replies.items():
            for queue in queues:
                consumers.setdefault(queue["name"], set()).add(worker)
        if wanted <= consumers.keys() or time.monotonic() >= deadline:
            return {queue: sorted(workers) for queue, workers in consumers.items()}
        wait *= 2
