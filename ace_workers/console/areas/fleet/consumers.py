"""Who consumes which queue, asked of the workers by a broadcast, kept for a few seconds.

A Celery ``inspect`` broadcast cannot know how many workers will answer: when some queue has
no consumer it waits its whole timeout (ACE_WORKER_REPLY_SECONDS). The console asks at most
once per :data:`FRESH_SECONDS`; a page asking later gets the last answer at once while a
background thread asks again, so only the very first page waits for the broadcast.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from starlette.datastructures import State

from ....distributed.service import Service

__all__ = ["FRESH_SECONDS", "InspectAnswer", "fleet_consumers"]

logger = logging.getLogger(__name__)

# An answer younger than this is served as it is; an older one is served while a new one is asked for.
FRESH_SECONDS = 5.0


@dataclass(frozen=True)
class InspectAnswer:
    """The workers' answer: consumers by queue, each worker's task counts (by task name), when it was
    asked, how long it took, what went wrong."""

    consumers: dict[str, list[str]] = field(default_factory=dict)
    asked_at: float = 0.0
    took_seconds: float = 0.0
    error: str | None = None
    tasks_done: dict[str, dict[str, int]] = field(default_factory=dict)

    def workers(self) -> dict[str, list[str]]:
        """The queues of each worker that answered, by worker name."""
        found: dict[str, list[str]] = {}
        for queue, names in sorted(self.consumers.items()):
            for name in names:
                found.setdefault(name, []).append(queue)
        return dict(sorted(found.items()))

    def to_dict(self, now: float) -> dict[str, Any]:
        return {
            "asked_at": self.asked_at,
            "age_seconds": round(max(0.0, now - self.asked_at), 1),
            "took_seconds": round(self.took_seconds, 3),
            "error": self.error,
        }


class _Cache:
    """The last answer of one console's fleet, and the one thread asking again, if any."""

    def __init__(self, service: Service) -> None:
        self.service = service
        self.answer: InspectAnswer | None = None
        self.lock = threading.Lock()
        self.asking = False

    def get(self) -> InspectAnswer:
        with self.lock:
            answer = self.answer
            stale = answer is None or time.time() - answer.asked_at >= FRESH_SECONDS
            start_thread = stale and answer is not None and not self.asking
            if start_thread:
                self.asking = True
        if answer is None:
            return self._ask()  # nothing to show yet: this page waits for the broadcast
        if start_thread:
            threading.Thread(target=self._ask, name="console-inspect", daemon=True).start()
        return answer

    def _ask(self) -> InspectAnswer:
        settings = self.service.runtime.settings
        started = time.monotonic()
        try:
            queues = settings.all_queues()
            dispatcher = self.service.dispatcher
            consumers = dispatcher.queue_consumers(queues, settings.worker_reply_seconds)
            workers = {name for names in consumers.values() for name in names}
            done = dispatcher.tasks_done(workers, settings.worker_reply_seconds)
            answer = InspectAnswer(consumers, time.time(), time.monotonic() - started, tasks_done=done)
        except Exception as exc:  # a broker away must not fail the page: it says so instead
            logger.warning("console: the workers could not be asked: %s", exc)
            problem = f"{type(exc).__name__}: {exc}"
            answer = InspectAnswer({}, time.time(), time.monotonic() - started, problem)
        with self.lock:
            self.answer = answer
            self.asking = False
        return answer


_CREATING = threading.Lock()


def fleet_consumers(state: State, service: Service) -> InspectAnswer:
    """The workers' last answer for this console app (``state`` is its ``app.state``), asked if none."""
    with _CREATING:
        cache = getattr(state, "fleet_inspect", None)
        if not isinstance(cache, _Cache):
            cache = _Cache(service)
            state.fleet_inspect = cache
    return cache.get()
