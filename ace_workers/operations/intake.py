"""Accept a producer's traces as one batch: who may, whether the fleet has room, and retries made once.

Sending needs the dispatcher, which a FleetClient does not hold: the caller (``ace-workers
intake``) hands :func:`accept_traces` a ``send`` that enqueues the checked traces as the batch id
it is given. Everything that can refuse a request is checked before anything is sent.
"""

from __future__ import annotations

import logging
import math
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..distributed.recipe_registry import BUILT_IN_RECIPES
from ..distributed.store.batches import BatchState
from ..distributed.store.errors import BatchNotFoundError
from ..distributed.store.keys import intake_idempotency_key
from ..distributed.store.label_names import parse_skillbook_ref
from ..distributed.store.replies import decode_text
from ..distributed.worker.errors import PayloadError
from ..distributed.worker.payload import check_trace
from .access import LEARN, require_role
from .errors import FleetBusyError, IntakeBodyError
from .fleet import FleetClient
from .principal import Principal

__all__ = ["IDEMPOTENCY_TTL_SECONDS", "IntakeResult", "accept_traces", "check_room"]

logger = logging.getLogger(__name__)

# How long a retried POST with the same Idempotency-Key answers the first batch: a day of retries.
IDEMPOTENCY_TTL_SECONDS = 24 * 3600
# What a refused producer is told to wait, at least and at most (seconds).
RETRY_AFTER_MIN, RETRY_AFTER_MAX = 1, 60


@dataclass(frozen=True)
class IntakeResult:
    """The batch a request made (or, ``replayed``, the batch its Idempotency-Key made before)."""

    batch_id: str
    skillbook: str
    traces: int
    epochs: int
    replayed: bool = False


def accept_traces(
    fleet: FleetClient,
    principal: Principal,
    traces: Sequence[Any],
    *,
    skillbook: str,
    recipe: str,
    epochs: int,
    send: Callable[[str], object],
    idempotency_key: str | None = None,
) -> IntakeResult:
    """Check, then ``send(batch_id)`` the ``traces`` as one batch learning into ``skillbook``.

    ``idempotency_key``: a request retried with the same key (by the same API key, within a day)
    answers the batch the first one made and sends nothing.

    Raises:
        ForeignSkillbookError, RoleTooLowError: ``principal`` may not learn on ``skillbook``.
        IntakeBodyError: no traces, or a trace that cannot travel (naming which).
        FleetBusyError: the admission window is full and the backlog above ACE_INTAKE_MAX_BACKLOG.
    """
    name = parse_skillbook_ref(skillbook).name  # NAME@LABEL: learning writes NAME's head
    require_role(fleet, principal, LEARN, name)  # first: a refused key learns nothing more
    claim = None
    if idempotency_key is not None:
        claim = intake_idempotency_key(fleet.prefix, principal.key_id or principal.name, idempotency_key)
        earlier = fleet.redis.get(claim)
        if earlier is not None:
            return _replayed(fleet, decode_text(earlier), name, len(traces), epochs)
    _check_request(traces, recipe, epochs, fleet)
    check_room(fleet)
    batch_id = uuid.uuid4().hex
    # NX: of two requests racing with one key, one sends; the other answers its batch.
    if claim is not None and not fleet.redis.set(claim, batch_id, nx=True, ex=IDEMPOTENCY_TTL_SECONDS):
        earlier = fleet.redis.get(claim)
        if earlier is not None:
            return _replayed(fleet, decode_text(earlier), name, len(traces), epochs)
        fleet.redis.set(claim, batch_id, ex=IDEMPOTENCY_TTL_SECONDS)  # expired in between
    try:
        send(batch_id)
    except BaseException:
        if claim is not None and not _running(fleet, batch_id):
            # Nothing runs under it (never made, or cancelled with nothing sent): a retry with the
            # key must be able to send. A batch that runs keeps it: the reconciler finishes it.
            fleet.redis.delete(claim)
        raise
    logger.info("intake: %s sent batch %s of %d traces to %s", principal.name, batch_id, len(traces), name)
    return IntakeResult(batch_id, name, len(traces), epochs)


def _replayed(fleet: FleetClient, batch_id: str, name: str, traces: int, epochs: int) -> IntakeResult:
    """The batch an earlier request with the same Idempotency-Key made, as its record says.

    While that request still stores its batch (or once the record expired) the retry's own
    figures stand in.
    """
    try:
        status = fleet.batches.status(batch_id)
    except BatchNotFoundError:
        return IntakeResult(batch_id, name, traces, epochs, replayed=True)
    return IntakeResult(batch_id, status.skillbook, status.per_epoch, status.epochs, replayed=True)


def _running(fleet: FleetClient, batch_id: str) -> bool:
    try:
        return fleet.batches.status(batch_id).state is BatchState.RUNNING
    except BatchNotFoundError:
        return False


def check_room(fleet: FleetClient) -> None:
    """FleetBusyError when admission's window is full and more samples wait than the setting allows.

    With admission off (window 0) or the setting 0, intake never refuses: the queues take it all.
    """
    window, most = fleet.settings.admission_window, fleet.settings.intake_max_backlog
    if window == 0 or most == 0:
        return
    load = fleet.admission.load()
    if load.in_flight >= window and load.waiting > most:
        # The backlog drains about a window per round of samples: wait for the part above the limit.
        rounds = math.ceil((load.waiting - most) / window)
        raise FleetBusyError(load.waiting, most, max(RETRY_AFTER_MIN, min(RETRY_AFTER_MAX, rounds)))


def _check_request(traces: Sequence[Any], recipe: str, epochs: int, fleet: FleetClient) -> None:
    """IntakeBodyError for a recipe or epochs the batch cannot have, no traces or too many, or naming
    the first trace that cannot travel, by its number."""
    settings = fleet.settings
    known = [name for name in (*BUILT_IN_RECIPES, *settings.recipe_paths()) if name != "ace"]
    if recipe not in known:
        # "ace" answers samples: intake takes recorded traces.
        raise IntakeBodyError("field recipe", f"unknown recipe {recipe!r} for traces: use {', '.join(known)}")
    if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 1:
        raise IntakeBodyError("field epochs", f"must be a whole number of at least 1, not {epochs!r}")
    if not traces:
        raise IntakeBodyError("body", "no traces: send a JSON array of trace objects, or one per line")
    if len(traces) * epochs > settings.max_batch_size:
        raise IntakeBodyError(
            "body",
            f"{len(traces)} traces x {epochs} epochs is above max_batch_size={settings.max_batch_size} "
            "(ACE_MAX_BATCH_SIZE)",
        )
    for number, trace in enumerate(traces, start=1):
        try:
            check_trace(trace, max_bytes=settings.max_trace_bytes)
        except PayloadError as exc:
            raise IntakeBodyError(f"trace {number}", str(exc)) from None
