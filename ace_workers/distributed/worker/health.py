"""A worker that stops consuming leaves, so its supervisor starts a fresh one.

After a Redis restart a worker can lose its consumer (kombu #582: "Error on
stopping Hub") and go on answering ``inspect ping`` while it takes no task:
ping-based health checks cannot see it. The watchdog notes, per queue, when
this worker last received a message and when a task of it last started or
finished. A queue that has held messages for ``ACE_WORKER_STALL_SECONDS``
while nothing of the kind happened means the worker stopped consuming it: the
watchdog reports it on ``/healthz`` and, if the next check agrees, logs it
and ends the process with :data:`EXIT_STALLED`. Its unacknowledged tasks
come back by redelivery or by the reconciler.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ...counts import noun_for
from .dispatch import Dispatcher
from .errors import BrokerUnavailable

__all__ = ["EXIT_STALLED", "ConsumptionWatchdog", "HealthReport"]

logger = logging.getLogger(__name__)

# The exit status of a worker that stopped consuming (EX_TEMPFAIL: try again, i.e. restart it).
EXIT_STALLED = 75


@dataclass
class HealthReport:
    """The watchdog's last look: each queue's waiting messages and idle seconds, and what is wrong."""

    checked_at: float
    queues: dict[str, dict[str, float]] = field(default_factory=dict)
    stalled: list[str] = field(default_factory=list)
    problem: str | None = None

    @property
    def healthy(self) -> bool:
        return not self.stalled

    def to_dict(self) -> dict[str, Any]:
        return {
            "healthy": self.healthy,
            "checked_at": self.checked_at,
            "queues": self.queues,
            "stalled": self.stalled,
            "problem": self.problem,
        }


class ConsumptionWatchdog:
    """Watches one worker's queues; ends the process when one holds messages it no longer takes.

    ``dispatcher`` answers the queues' depths. The worker start-up (celery_worker.py) tells it of
    each task received, started and finished (:meth:`note_delivery`).
    """

    def __init__(
        self,
        dispatcher: Dispatcher,
        queues: Iterable[str],
        *,
        stall_seconds: float,
        check_seconds: float,
        exit_process: Callable[[int], None] = os._exit,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.dispatcher = dispatcher
        self.queues = sorted(queues)
        self.stall_seconds = stall_seconds
        self.check_seconds = check_seconds
        self._exit = exit_process
        self._clock = clock
        started = clock()
        self._last_activity = dict.fromkeys(self.queues, started)
        # When each queue was first seen holding messages (None: empty at the last look). Idle
        # time counts from then, so messages arriving after a quiet hour are not a stall.
        self._waiting_since: dict[str, float | None] = dict.fromkeys(self.queues)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.report = HealthReport(checked_at=time.time())

    # -- what the worker does ----------------------------------------------------------------

    def note_delivery(self, queue: object) -> None:
        """A task of this worker was received, started or finished; ``queue`` is where it came from,
        if the broker said (a queue not watched counts as every queue)."""
        self.note_activity(queue if isinstance(queue, str) and queue in self._last_activity else None)

    def note_activity(self, queue: str | None = None) -> None:
        """Something happened on ``queue`` (on every queue when it is not known)."""
        now = self._clock()
        with self._lock:
            for name in [queue] if queue else self.queues:
                self._last_activity[name] = now

    # -- the check -------------------------------------------------------------------------------

    def check(self) -> HealthReport:
        """Look at the queues once; the report names the queues this worker stopped consuming."""
        now = self._clock()
        report = HealthReport(checked_at=time.time())
        try:
            depths = self.dispatcher.queue_depths(self.queues)
        except BrokerUnavailable as exc:
            # The broker is away or full: nobody can consume, so this is no sign of a stuck worker.
            report.problem = str(exc)
            self.report = report
            return report
        for queue in self.queues:
            if not depths[queue]:
                self._waiting_since[queue] = None
            elif self._waiting_since[queue] is None:
                self._waiting_since[queue] = now
        with self._lock:
            idle = {
                queue: now - max(self._last_activity[queue], self._waiting_since[queue] or now)
                for queue in self.queues
            }
        for queue in self.queues:
            report.queues[queue] = {"waiting": depths[queue], "idle_seconds": round(idle[queue], 1)}
            if depths[queue] and idle[queue] > self.stall_seconds:
                report.stalled.append(queue)
        if report.stalled:
            report.problem = (
                f"{noun_for(len(report.stalled), 'queue')} {', '.join(report.stalled)} "
                f"{'holds' if len(report.stalled) == 1 else 'hold'} messages this worker has taken none of "
                f"for over {self.stall_seconds:g} s"
            )
        self.report = report
        return report

    def note_problem(self, problem: str) -> None:
        """Show ``problem`` on /healthz until the next check (the worker waiting for Redis, say)."""
        self.report = HealthReport(checked_at=time.time(), problem=problem)

    def health(self) -> dict[str, Any]:
        """What /healthz answers: the last report, unhealthy too if the checks stopped coming."""
        answer = self.report.to_dict()
        late = time.time() - self.report.checked_at
        if late > 3 * self.check_seconds + 5:
            answer["healthy"] = False
            answer["problem"] = f"the watchdog has not checked for {late:.0f} s"
        return answer

    def start(self) -> None:
        """Check every ``check_seconds`` from a daemon thread; exit the process when stalled."""
        self._thread = threading.Thread(target=self._run, name="ace-watchdog", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _run(self) -> None:
        stalled_before = False
        while not self._stop.wait(self.check_seconds):
            try:
                report = self.check()
            except Exception:  # the watchdog must outlive any one failed look
                logger.exception("worker watchdog: check failed")
                continue
            if report.healthy:
                stalled_before = False
            elif not stalled_before:  # /healthz says so now; the next check decides
                logger.error("worker may have stopped consuming: %s", report.problem)
                stalled_before = True
            else:
                logger.critical("worker stopped consuming: %s; exiting with %d", report.problem, EXIT_STALLED)
                logging.shutdown()  # flush the lines above before the hard exit
                self._exit(EXIT_STALLED)
                return
