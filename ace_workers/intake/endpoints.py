"""Intake's endpoints: producers POST traces with an API key, never the fleet's Redis URL.

``POST /v1/traces`` takes a JSON array of trace objects, or JSON Lines (one object a line), and
the batch's fields as query parameters (``skillbook``, ``recipe``, ``epochs``); it answers 202
with the batch id and its status URL. ``GET /v1/batches/{id}`` answers the batch's status (for
the key's tenant only). The console's gate authenticates the key (a bearer token); the operation
(:func:`~ace_workers.operations.intake.accept_traces`) decides what the key may do.
"""

from __future__ import annotations

import logging

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ..console.access import ConsoleAccess, Principal
from ..console.security import ConsoleGate
from ..distributed.service import Service
from ..distributed.tenancy.api_keys import ApiKeys
from ..distributed.tenancy.errors import ForeignSkillbookError
from ..operations import FleetClient, outcome_of
from ..operations.batches import batch_report
from ..operations.errors import FleetBusyError, IntakeBodyError, IntakeBodyTooLargeError
from ..operations.intake import accept_traces
from ..operations.outcomes import UNEXPECTED
from .body import read_traces

__all__ = ["build_intake_app", "IDEMPOTENCY_HEADER"]

logger = logging.getLogger(__name__)

IDEMPOTENCY_HEADER = "idempotency-key"
# Longer than any idempotency key a client makes (a uuid is 36): a bigger one is a mistake.
MAX_IDEMPOTENCY_KEY = 200


def build_intake_app(service: Service, *, host: str) -> Starlette:
    """Intake for the fleet ``service`` reaches; ``host`` is the address bound (loopback: Host checked)."""
    settings = service.runtime.settings
    access = ConsoleAccess(api_keys=ApiKeys(service.runtime.redis, prefix=settings.queue_prefix))
    app = Starlette(
        routes=[
            Route("/healthz", _healthz, methods=["GET"]),
            Route("/v1/traces", _post_traces, methods=["POST"]),
            Route("/v1/batches/{batch_id}", _get_batch, methods=["GET"]),
        ],
        # The console's gate: one key check for both, every refusal of intake as JSON.
        middleware=[Middleware(ConsoleGate, access=access, host=host, json_paths=("/",))],
    )
    app.state.service = service
    app.state.fleet = FleetClient.sharing(service.runtime.redis, settings)
    return app


async def _post_traces(request: Request) -> Response:
    """Enqueue the body's traces as one batch; 202 with its id and status URL."""
    fleet: FleetClient = request.app.state.fleet
    service: Service = request.app.state.service
    principal: Principal = request.scope["state"]["principal"]
    try:
        body = await _read_body(request, fleet.settings.intake_max_body_bytes)
        traces = read_traces(body)
        skillbook, recipe, epochs = _fields(request)
        idempotency_key = _idempotency_key(request)

        def send(batch_id: str) -> object:
            return service.producer.enqueue_traces(
                traces, skillbook, epochs, recipe=recipe, batch_id=batch_id
            )

        result = await run_in_threadpool(
            accept_traces,
            fleet,
            principal,
            traces,
            skillbook=skillbook,
            recipe=recipe,
            epochs=epochs,
            send=send,
            idempotency_key=idempotency_key,
        )
    except Exception as exc:
        return _refusal(request, exc)
    answer = {
        "batch_id": result.batch_id,
        "skillbook": result.skillbook,
        "traces": result.traces,
        "epochs": result.epochs,
        "replayed": result.replayed,
        "status_url": str(request.url_for("_get_batch", batch_id=result.batch_id)),
    }
    return JSONResponse(answer, status_code=202)


async def _get_batch(request: Request) -> Response:
    """The batch's state and counts, if the key's tenant may read its skillbook (else 404)."""
    fleet: FleetClient = request.app.state.fleet
    principal: Principal = request.scope["state"]["principal"]
    try:
        report = await run_in_threadpool(batch_report, fleet, principal, request.path_params["batch_id"])
    except Exception as exc:
        return _refusal(request, exc)
    status = report.status
    return JSONResponse(
        {
            "batch_id": status.batch_id,
            "skillbook": status.skillbook,
            "state": status.state.value,
            "total": status.total,
            "done": status.done,
            "failed": status.failed,
            "queued": status.queued,
        }
    )


async def _healthz(request: Request) -> Response:
    """200 when the fleet's Redis answers a PING, else 503 (no credentials needed: it says only that)."""
    fleet: FleetClient = request.app.state.fleet
    try:
        await run_in_threadpool(fleet.redis.ping)
    except Exception as exc:
        logger.warning("intake /healthz: Redis did not answer: %s: %s", type(exc).__name__, exc)
        return JSONResponse({"ok": False, "redis": "not ok"}, status_code=503)
    return JSONResponse({"ok": True, "redis": "ok"})


async def _read_body(request: Request, limit: int) -> bytes:
    """The body, read as it streams: IntakeBodyTooLargeError once it passes ``limit`` bytes."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise IntakeBodyTooLargeError(limit)
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise IntakeBodyTooLargeError(limit)
        chunks.append(chunk)
    return b"".join(chunks)


def _fields(request: Request) -> tuple[str, str, int]:
    """The batch's skillbook, recipe and epochs, from the query (defaults: default, trace_analyser, 1)."""
    query = request.query_params
    unknown = sorted(set(query) - {"skillbook", "recipe", "epochs"})
    if unknown:
        raise IntakeBodyError(f"field {unknown[0]}", "unknown: the fields are skillbook, recipe and epochs")
    epochs = query.get("epochs", "1")
    if not epochs.isdigit():
        raise IntakeBodyError("field epochs", f"must be a whole number of at least 1, not {epochs!r}")
    return query.get("skillbook", "default"), query.get("recipe", "trace_analyser"), int(epochs)


def _idempotency_key(request: Request) -> str | None:
    value = request.headers.get(IDEMPOTENCY_HEADER)
    if value is not None and not 0 < len(value) <= MAX_IDEMPOTENCY_KEY:
        raise IntakeBodyError("header Idempotency-Key", f"must be 1 to {MAX_IDEMPOTENCY_KEY} characters")
    return value


def _refusal(request: Request, exc: Exception) -> Response:
    """The error as JSON with the status the operations' table gives it; a bug is logged, 500."""
    if isinstance(exc, ForeignSkillbookError):
        # Another tenant's skillbook is answered as one that does not exist: no owner is named.
        return JSONResponse({"error": "not_found", "message": "no such skillbook for this key"}, 404)
    outcome = outcome_of(exc)
    if outcome is UNEXPECTED:
        logger.exception("intake: %s %s failed", request.method, request.url.path, exc_info=exc)
        message = f"internal error: {type(exc).__name__}"
    else:
        message = str(exc)
    headers = {"retry-after": str(exc.retry_after)} if isinstance(exc, FleetBusyError) else None
    return JSONResponse({"error": outcome.kind, "message": message}, outcome.http_status, headers=headers)
