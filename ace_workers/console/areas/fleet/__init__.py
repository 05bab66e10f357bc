"""The console's fleet area: workers and their queues, queue depths, lag, and the write partitions.

Each worker's task count is Celery's ``inspect stats`` (tasks taken since it started, by task
name; Celery counts no failures there). With ACE_FLOWER_URL set the page links to Flower,
which has the rest: each task's outcome, failures per worker, rates.

What is shown is what Redis and a Celery ``inspect`` broadcast know: a worker's own
``/healthz`` answers on its metrics port, per process, and is not reachable from here.
The broadcast's answer is kept for a few seconds (see :mod:`.fleet_inspect`).

Lag is measured two ways: per queue, the messages waiting per consumer; per running
batch, how long its longest-waiting unfinished sample has gone without progress (sent,
or a step of it started): the age of the oldest work the fleet has not got to.
"""

from __future__ import annotations

import time
from typing import Any

from starlette.routing import BaseRoute

from ....distributed.store.batches import BatchState
from ....distributed.store.store import read_registry
from ....distributed.worker.fleet import FRESH_SECONDS, shaping_settings, worker_records
from ....distributed.worker.partitions import recorded_partitions
from ...views import View, page
from .consumers import InspectAnswer, fleet_consumers

__all__ = ["ROUTES", "fleet_page"]

REFRESH_SECONDS = 10


def fleet_page(view: View) -> dict[str, Any]:
    """Workers (inspect and their Redis records), queues with depth and consumers, lag, partitions."""
    now = time.time()
    answer = fleet_consumers(view.request.app.state, view.service)
    queues, depth_error = _queues(view, answer)
    return {
        "inspect": answer.to_dict(now),
        "workers": _workers(view, answer, now),
        "queues": queues,
        "depth_error": depth_error,
        "lag": _lag(view, now),
        "partitions": _partitions(view, answer, queues),
        "settings": shaping_settings(view.service.runtime.settings),
        "flower_url": view.service.runtime.settings.flower_url,
        "refresh_seconds": REFRESH_SECONDS,
    }


def _workers(view: View, answer: InspectAnswer, now: float) -> list[dict[str, Any]]:
    """Every worker that answered the broadcast or has a record in Redis, with what each says."""
    answered = answer.workers()
    records = worker_records(view.service.runtime)
    rows = []
    for name in sorted({*answered, *records}):
        record = records.get(name, {})
        at = record.get("at")
        age = round(now - at, 1) if isinstance(at, int | float) and not isinstance(at, bool) else None
        settings = record.get("settings")
        tasks = answer.tasks_done.get(name)
        rows.append(
            {
                "name": name,
                "queues": answered.get(name, []),
                "answered_inspect": name in answered,
                "record_age_seconds": age,
                "record_fresh": age is not None and age <= FRESH_SECONDS,
                "settings": settings if isinstance(settings, dict) else {},
                # Celery's count of the tasks it took since it started (None: it did not answer).
                "tasks_done": sum(tasks.values()) if tasks is not None else None,
                "tasks_done_by_task": tasks or {},
            }
        )
    return rows


def _queues(view: View, answer: InspectAnswer) -> tuple[list[dict[str, Any]], str | None]:
    """Each queue the fleet serves: messages waiting, its consumers, waiting per consumer."""
    names = view.service.runtime.settings.all_queues()
    try:
        depths: dict[str, int | None] = {**view.service.dispatcher.queue_depths(names)}
        error = None
    except Exception as exc:  # the broker away: the page says so and shows the rest
        depths, error = dict.fromkeys(names), f"{type(exc).__name__}: {exc}"
    rows = []
    for name in names:
        consumers = answer.consumers.get(name, [])
        depth = depths.get(name)
        rows.append(
            {
                "name": name,
                "depth": depth,
                "consumers": consumers,
                "per_consumer": round(depth / len(consumers), 1) if depth is not None and consumers else None,
            }
        )
    return rows, error


def _lag(view: View, now: float) -> list[dict[str, Any]]:
    """Per running batch: its queued and running samples, and the longest wait without progress."""
    batches = view.service.runtime.batches
    rows = []
    for status in batches.statuses(batches.running()):
        batch_id = status.batch_id
        if status.state is not BatchState.RUNNING:
            continue  # finished; the reconciler takes it off the running set on its next round
        if not view.can_see(status.skillbook):
            continue  # an API key's principal sees its tenant's batches only
        oldest = batches.oldest_progress(batch_id)
        rows.append(
            {
                "batch_id": batch_id,
                "skillbook": status.skillbook,
                "queued": status.queued,
                "running": status.running,
                "oldest_wait_seconds": round(now - oldest, 1) if oldest is not None else None,
                "idle_seconds": round(now - status.progress_at, 1),
            }
        )
    return sorted(rows, key=lambda row: -(row["oldest_wait_seconds"] or 0))


def _partitions(view: View, answer: InspectAnswer, queues: list[dict[str, Any]]) -> dict[str, Any]:
    """The write partitions: configured and recorded count, and per write queue its skillbooks and writer."""
    settings = view.service.runtime.settings
    depth = {row["name"]: row["depth"] for row in queues}
    write_queues = settings.write_queues()
    skillbooks: dict[str, list[str]] = {queue: [] for queue in write_queues}
    # A member no skillbook can have is left out here (the skillbooks page names it).
    for name in read_registry(view.state.redis, view.state.prefix)[0]:
        if view.can_see(name):
            skillbooks[settings.write_queue(name)].append(name)
    return {
        "configured": settings.write_partitions,
        "recorded": recorded_partitions(view.state.redis, settings),
        "queues": [
            {
                "partition": number,
                "queue": queue,
                "consumers": answer.consumers.get(queue, []),
                "depth": depth.get(queue),
                "skillbooks": skillbooks[queue],
            }
            for number, queue in enumerate(write_queues)
        ],
    }


ROUTES: list[BaseRoute] = [
    *page(
        "/fleet",
        "fleet/index.html",
        fleet_page,
        name="fleet",
        summary="Workers and their queues, queue depths and lag, write partitions (inspect kept 5 s).",
    ),
]
