"""The console's batches area: running and recent batches, one batch in detail (cancelled or resumed
there), and the dead letters.

A batch's counts are the document ``ace-workers status --json`` prints (made by
:func:`~ace_workers.operations.batches.batch_report` for both), with the
per-step figures the workers record (samples done and failed, seconds, LLM tokens and cost).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

from starlette.routing import BaseRoute

from ....counts import counted
from ....distributed.store.batches import RECENT_BATCHES, BatchState, BatchStatus
from ....distributed.store.errors import BatchNotFoundError
from ....distributed.store.keys import validate_skillbook_name
from ....operations.batches import batch_report, cancel_batch, resume_batch
from ...errors import BadRequestError, NotFoundError
from ...views import ActionResult, View, action, page
from ..fleet.consumers import fleet_consumers
from .cost import batch_usage, cost_points, cost_series
from .letters import LETTER_ROUTES

__all__ = [
    "ROUTES",
    "batch_page",
    "batch_rows",
    "batches_index",
    "cancel_batch_action",
    "learning_cost",
    "resume_batch_action",
]

# How often a page showing a running batch reloads itself.
REFRESH_SECONDS = 5


def batches_index(view: View) -> dict[str, Any]:
    """Running batches and the recent ones (``?skillbook=`` picks one skillbook's), with their cost."""
    skillbook = _skillbook_filter(view)
    limit = view.int_query("limit", 50, minimum=1, maximum=RECENT_BATCHES)
    rows = batch_rows(view, skillbook, limit)
    running = [row for row in rows if row["state"] == BatchState.RUNNING.value]
    return {
        "skillbook": skillbook,
        "limit": limit,
        "running": running,
        "recent": [row for row in rows if row["state"] != BatchState.RUNNING.value],
        **learning_cost(rows),
        "refresh_seconds": REFRESH_SECONDS if running else None,
    }


def learning_cost(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The cost points of these batch rows, and the lines the learning-cost plots draw."""
    points = cost_points(rows)
    return {"cost_points": points, "cost_series": cost_series(points, time.time())}


def batch_rows(view: View, skillbook: str | None, limit: int) -> list[dict[str, Any]]:
    """The running and the ``limit`` most recent batches (of ``skillbook`` only, if named), newest first."""
    batches = view.service.runtime.batches
    created = dict(batches.recent(limit))
    # Running ones first, some perhaps older than the recent ones shown (or from before the index).
    rows = []
    for status in batches.statuses([*batches.running(), *created]):
        if (skillbook is None or status.skillbook == skillbook) and view.can_see(status.skillbook):
            rows.append(_row(view, status))
    rows.sort(key=lambda row: row["created"], reverse=True)
    return rows


def batch_page(view: View) -> dict[str, Any]:
    """One batch: the ``status --json`` document, progress and timings per step, LLM usage, errors."""
    batch_id = view.path("batch_id")
    ttl = view.service.runtime.settings.result_ttl_seconds
    missing = f"no batch {batch_id!r}: never created, or its records expired ({ttl} s after it finished)"
    try:
        # Another tenant's batch is as missing as one never made: its existence is not revealed.
        if not view.can_see(view.service.runtime.batches.status(batch_id).skillbook):
            raise NotFoundError(missing)
    except BatchNotFoundError:
        raise NotFoundError(missing) from None
    answer = fleet_consumers(view.request.app.state, view.service)
    try:
        report = batch_report(
            view.state.fleet,
            view.acting,
            batch_id,
            consumers=lambda queue: answer.consumers.get(queue, []),
        )
    except BatchNotFoundError:
        raise NotFoundError(missing) from None
    status = report.status
    steps = view.service.runtime.batches.step_stats(batch_id)
    return {
        "status": report.to_dict(),
        "created": _iso(status.created),
        "finished": status.done + status.failed,
        "steps": [{**step.to_dict(), "total": status.total} for step in steps],
        "usage": batch_usage(steps, status.done + status.failed),
        "consumers_asked": answer.to_dict(time.time()),
        "refresh_seconds": REFRESH_SECONDS if status.state is BatchState.RUNNING else None,
    }


def cancel_batch_action(view: View) -> ActionResult:
    """Cancel the batch: steps not yet run are skipped (the operation checks the learn role)."""
    batch_id = view.path("batch_id")
    result = cancel_batch(view.state.fleet, view.acting, batch_id)
    status = result.status
    if result.cancelled_now:
        message = f"batch {batch_id} cancelled: {status.summary()}"
    else:
        message = f"batch {batch_id} is {status.state.label} already"
    data = {"cancelled_now": result.cancelled_now, "state": status.state.value}
    notice = "batch-cancelled" if result.cancelled_now else "batch-ended"
    return ActionResult(message, f"/batches/{batch_id}", data, notice=notice)


def resume_batch_action(view: View) -> ActionResult:
    """Send what the batch never sent (its producer died), and again what was lost on the way."""
    # It sends messages: the reconciler's redrive, with the console's dispatcher.
    from ....distributed.producer.fleet_check import require_workers
    from ....distributed.worker.reconcile import reconcile_batch

    batch_id = view.path("batch_id")
    service = view.service

    def send(status: BatchStatus) -> tuple[int, int]:
        require_workers(service.dispatcher, status.recipe, status.skillbook)
        sent = service.producer.resume(batch_id)
        return sent, len(reconcile_batch(service.dispatcher, batch_id).redriven)

    result = resume_batch(view.state.fleet, view.acting, batch_id, send)
    if result.status.state is not BatchState.RUNNING:
        message = f"batch {batch_id} is {result.status.state.label}: nothing to resume"
    else:
        message = (
            f"batch {batch_id}: {counted(result.sent, 'sample')} never sent now on the way; "
            f"{counted(result.redriven, 'lost sample')} sent again"
        )
    data = {"state": result.status.state.value, "sent": result.sent, "redriven": result.redriven}
    notice = "batch-resumed" if result.status.state is BatchState.RUNNING else "batch-ended"
    return ActionResult(message, f"/batches/{batch_id}", data, notice=notice)


def _row(view: View, status: BatchStatus) -> dict[str, Any]:
    """One batch as the index lists it."""
    finished = status.done + status.failed
    return {
        **status.to_dict(),
        "finished": finished,
        "created": status.created,
        "created_at": _iso(status.created),
        "usage": batch_usage(view.service.runtime.batches.step_stats(status.batch_id), finished),
    }


def _skillbook_filter(view: View) -> str | None:
    name = view.query("skillbook").strip()
    if not name:
        return None
    try:
        validate_skillbook_name(name)
    except ValueError as exc:
        raise BadRequestError(f"skillbook={name!r}: {exc}") from None
    view.authorize(name)  # another tenant's: 404
    return name


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).isoformat(timespec="seconds")


ROUTES: list[BaseRoute] = [
    *page(
        "/batches",
        "batches/index.html",
        batches_index,
        name="batches",
        summary="Running and recent batches (?skillbook=NAME, ?limit=N), with LLM tokens per sample.",
    ),
    *page(
        "/batches/{batch_id}",
        "batches/batch.html",
        batch_page,
        name="batch",
        summary="One batch: the status --json document, progress and timings per step, LLM usage.",
    ),
    *action(
        "/batches/{batch_id}/cancel",
        cancel_batch_action,
        name="batch:cancel",
        role=None,  # cancel_batch checks the learn role on the batch's skillbook
        summary="Cancel a running batch: steps not yet run are skipped, nothing is sent again.",
        target="batch/{batch_id}",
    ),
    *action(
        "/batches/{batch_id}/resume",
        resume_batch_action,
        name="batch:resume",
        role=None,  # resume_batch checks the learn role on the batch's skillbook
        summary="Resume a running batch: send what its producer never sent, and again what was lost.",
        target="batch/{batch_id}",
    ),
    *LETTER_ROUTES,
]
