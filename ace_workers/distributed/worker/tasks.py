"""What the one task every step runs as does, and what happens around a step call.

``ace.step`` rebuilds the step context from its JSON payload, gives the step a
view of the skillbook at the store's current version, runs it inside a write
scope (so its writes are idempotent), and returns the next payload. The task
of the last step records the sample in its batch; the one that finishes an
epoch starts the next epoch from the batch's stored items.

Nothing here knows Celery: a delivery ends with a result, with a :class:`StepOutcome`
(dropped, requeued, retried) or with the step's error once its sample failed, and the
task wrapper in app.py tells the broker.
"""

from __future__ import annotations

import logging
import time
import traceback
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

import redis

from ...core.context import SkillbookView
from ...errors import AceError, LLMError, LLMRequestRejected, RetriesExhausted
from ...observability.logs import StepLogContext, step_log_context
from ...observability.metrics import llm_usage
from ...redaction.context_redaction import redact_context
from ..store.batches import sample_key
from ..store.errors import BatchNotFoundError, VersionConflict
from ..store.keys import DEFAULT_TENANT
from ..store.step_stats import StepRun, run_from_message
from ..store.write_scope import WriteScope, write_scope
from ..tenancy.errors import BudgetExhaustedError
from .admission import admit_more, send_admitted
from .dead_letters import park_dead_letter
from .deferrals import defer_step
from .delivery import StepDelivery
from .dispatch import Dispatcher
from .errors import (
    ForeignTenantError,
    StepAborted,
    StepDropped,
    StepOutcome,
    StepRequeued,
    StepRetry,
    UnknownRecipeError,
    UnknownStepError,
)
from .failure_logs import failure_line
from .finishing import start_next_epoch
from .fleet import check_message_shape
from .payload import context_to_payload, payload_to_context
from .provenance_metadata import with_fleet_provenance
from .reconcile import reconcile_running
from .redis_health import MAX_MEMORY_WAIT_SECONDS, is_redis_full, refuses_writes, when_redis_has_room
from .retries import broker_countdown, retry_countdown
from .runtime import Route, WorkerRuntime
from .serving import count_served, mark_served, serve
from .trace_context import traced_task, with_carrier

__all__ = [
    "CELERY_MISHANDLES",
    "NOT_RETRYABLE",
    "REDIS_OUTAGE",
    "RETRYABLE",
    "STEP_RUN_KEY",
    "admit_batch",
    "handle_step",
    "reconcile_fleet",
    "run_step",
    "start_next_epoch",
    "wait_for_room",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")

# The payload key of the run of the step that sent it (StepRun.to_message): the next step counts it
# in the batch's steps as it starts (record_progress), so no step spends a round trip on its figures.
STEP_RUN_KEY = "step_run"

# Worth another delivery: rate limits and timeouts the client gave up on, and lost CAS races.
RETRYABLE = (LLMError, VersionConflict)
# Redis went away mid-step (a restart, a failover). Not a failure of the sample, and not for
# self.retry either: publishing the retry goes through the broker connection that just broke,
# and a retry that cannot be sent is rejected for good. The message is requeued instead, or,
# if even that cannot reach Redis, left unacknowledged for redelivery after the visibility
# timeout. The step's writes are idempotent, so running it again changes nothing twice.
REDIS_OUTAGE = (redis.ConnectionError, redis.TimeoutError)
# Failing for good: another delivery would meet the same answer, so the sample fails and its
# message is dead-lettered. LLMRequestRejected: the provider refused the request itself (bad
# credentials, unknown model, bad request); retried, it would fail the same way each time.
# ForeignTenantError: the message's tenant does not own its skillbook; that does not change
# by waiting (and a message of ours whose tenant lost the skillbook should not write it).
# BudgetExhaustedError: the tenant's budget is spent; a tenant that asked to wait has the step
# deferred (deferrals.py), one that asked to fail has its sample failed at once, with the reason.
NOT_RETRYABLE = (
    RetriesExhausted,
    UnknownRecipeError,
    LLMRequestRejected,
    ForeignTenantError,
    BudgetExhaustedError,
)
# What Celery mishandles when a task raises it, besides every BaseException that is not an
# Exception (KeyboardInterrupt wedges a threads worker with its message unacknowledged; SystemExit
# ends a prefork child): MemoryError, which it re-raises before acknowledging, so the message comes
# back and fails again forever. A step raising one fails its sample like any error, and Celery is
# shown StepAborted instead. Only a pool child told to stop differs (see process_is_stopping).
CELERY_MISHANDLES = (MemoryError,)


def run_step(
    dispatch: Dispatcher,
    payload: dict[str, Any],
    *,
    recipe: str,
    skillbook: str,
    index: int,
    batch_id: str,
    epoch: int,
    sample_index: int,
    shape: str | None = None,
    node: str = "",
    tenant: str = DEFAULT_TENANT,
) -> dict[str, Any]:
    """Run step ``index`` of ``recipe`` on one sample's payload and return the next payload.

    ``dispatch`` sends what follows (the next epoch, admitted samples) for its runtime. ``shape`` is
    the recipe's shape where the sample was sent (see fleet.py), ``node`` this worker's name.
    ``tenant`` is the tenant the message was sent for (its batch's; none: ``default``): a
    skillbook another tenant owns is refused (ForeignTenantError) before anything runs.
    """
    runtime = dispatch.runtime
    _, routes = runtime.pipeline(recipe, skillbook)
    check_message_shape(runtime, recipe, routes, shape, node)
    if not (isinstance(index, int) and 0 <= index < len(routes)):
        raise UnknownStepError(recipe, index, len(routes))
    route = routes[index]
    # Before anything is read or written for the sample: a message of another tenant writes nothing.
    owner = runtime.tenants.tenant_of(skillbook)
    if tenant != owner:
        # Refused for good, so not on a view up to two seconds old: a tenant removed just now
        # (its failed samples retried as the skillbook's owner) may not be in it yet.
        runtime.tenants.forget()
        owner = runtime.tenants.tenant_of(skillbook)
    if tenant != owner:
        raise ForeignTenantError(skillbook, owner, tenant)
    # Every line logged while the step runs (roles and store included) names the step, and
    # the step is counted in the worker's metrics: a finished sample, or a failure by type.
    log_context = StepLogContext(batch_id, sample_key(epoch, sample_index), skillbook, route.name)
    with step_log_context(log_context), runtime.metrics.timed_step(route.name, skillbook):
        started = time.perf_counter()
        book = runtime.skillbook(skillbook)
        # A writer writes through the store, never through its view, and takes no version from it:
        # its view is read (and the cached snapshot brought up to date) only if the step reads it.
        reads_view = not route.writes_skillbook or route.serves_skillbook
        # The step before's figures, which its message carries, are counted as this step starts,
        # and the skillbook's version is read in the same round trip.
        previous = run_from_message(payload.get(STEP_RUN_KEY), index - 1) if index > 0 else None
        runs, head = runtime.batches.record_progress_and_read(
            batch_id,
            epoch,
            sample_index,
            first_step=index == 0,
            previous=previous,
            reads=book.store.queue_head_read if reads_view else None,
        )
        if not runs:
            logger.info(
                "batch %s was cancelled: %s not run, the rest of its chain dropped", batch_id, route.name
            )
            raise StepDropped(f"batch {batch_id} was cancelled")  # the chain's next steps are never sent
        if reads_view:
            version, view = book.current(head)  # the version and the view that goes with it
        else:
            version, view = None, SkillbookView.on_first_use(book.view)
        # The producer checked the trace's size; a message need not come from a producer of ours.
        ctx = payload_to_context(
            payload,
            skillbook=view,
            claims=runtime.claims,
            max_trace_bytes=runtime.settings.max_trace_bytes,
        )
        # Defense in depth: the producer redacted the trace before storing it, but a message may come
        # from an older producer or another writer. What a chain's first step reads is redacted here
        # (a producer only ever sends first steps; later ones carry what a worker returned), and
        # every step's role outputs, in and out (an LLM may echo a skill older than redaction).
        redactor = runtime.redactor(owner)
        ctx = redact_context(redactor, ctx, outputs_only=index > 0)
        # What UpdateStep and TagStep record as where their writes came from (worker/provenance_metadata.py).
        ctx = with_fleet_provenance(ctx, payload, batch_id=batch_id, sample_index=sample_index, recipe=recipe)
        metadata = dict(ctx.metadata)
        # A writer rebases on the version the steps before it read (the SkillManager's snapshot).
        base_version = metadata.get("skillbook_version") if route.writes_skillbook else None
        if version is not None and not route.writes_skillbook:
            ctx = ctx.replace(metadata={**metadata, "skillbook_version": version})
        if version is not None and route.serves_skillbook:  # the sample's label, if any (serving.py)
            ctx = serve(book.store, ctx, version)
            mark_served(ctx.metadata)
        scope = WriteScope(
            key_prefix=f"{batch_id}:{sample_key(epoch, sample_index)}:{index}",
            base_version=base_version,
            source={"batch": batch_id, "epoch": epoch, "sample": sample_index, "step": route.name},
        )
        with write_scope(scope):
            out = runtime.call_step(recipe, skillbook, index, ctx)
        out = redact_context(redactor, out, redacted_in=ctx)
        runtime.metrics.observe_llm_outputs(ctx, out)
        result = context_to_payload(out, claims=runtime.claims)
        usage = llm_usage(ctx, out)
        # The batch's per-step figures (the console's progress per step, time and tokens).
        run = StepRun(
            index,
            route.name,
            time.perf_counter() - started,
            usage.prompt_tokens,
            usage.completion_tokens,
            usage.cost,
        )
        if index == len(routes) - 1:
            finished = runtime.batches.record_done(batch_id, epoch, sample_index, result, step=run)
            if finished is not None:  # counted once per sample: None when it was recorded already
                count_served(runtime.redis, book.store.keys, out.metadata)
            start_next_epoch(dispatch, batch_id, epoch, finished, epochs=ctx.total_epochs)
        else:
            # Counted by the next step's record_progress, in the round trip it makes anyway; the last
            # step's run goes with the sample's record.
            result[STEP_RUN_KEY] = run.to_message()
        return result


def handle_step(
    dispatch: Dispatcher,
    delivery: StepDelivery,
    payload: dict[str, Any],
    kwargs: dict[str, Any],
    *,
    stopping: Callable[[], bool],
) -> dict[str, Any]:
    """Run one delivery of a step message: its result, or a :class:`StepOutcome` the task wrapper
    turns into the broker's answer (app.py), or the step's error once its sample has failed.

    ``stopping`` says whether this process was told to stop (then an error is the shutdown's).
    """
    runtime = dispatch.runtime
    waits_for_room = 0
    while True:
        try:
            if waits_for_room:
                wait_for_room(runtime, waits_for_room)
            # The step's span, in the sample's trace; the next step gets the sample's trace context.
            with traced_task(
                payload, kwargs, _step_name(runtime, kwargs), delivery, expected=(StepDropped,)
            ) as carrier:
                result = run_step(dispatch, payload, **kwargs, node=delivery.hostname)
                return with_carrier(result, carrier)
        except StepOutcome:
            raise  # how the delivery ends, as a step of a cancelled batch: no failure
        except BaseException as exc:
            if stopping():
                raise  # not the step's failure: its message stays unacknowledged and comes back
            if not is_redis_full(exc):
                _handle_step_error(dispatch, delivery, payload, kwargs, exc)
            # Redis out of memory (maxmemory, noeviction) passes, and is no failure of the sample.
            # The broker is as full as the store: a requeue or a retry would be refused too, and
            # a requeue refused half-way leaves the message held by this worker for good. So the
            # step waits for room and runs again in this delivery (its writes are idempotent).
            logger.warning(
                "%s on %s: Redis is out of memory; the step runs again once it has room",
                type(exc).__name__,
                _step_name(runtime, kwargs),
            )
            waits_for_room += 1


def _handle_step_error(
    dispatch: Dispatcher, delivery: StepDelivery, payload: Any, kwargs: dict[str, Any], exc: BaseException
) -> NoReturn:
    """Raise how a step's error ends its delivery: a retry, a requeue, or a failure for good."""
    runtime = dispatch.runtime
    if isinstance(exc, REDIS_OUTAGE):
        logger.warning(
            "%s on %s: Redis unreachable; the step goes back to its queue",
            type(exc).__name__,
            _step_name(runtime, kwargs),
        )
        raise StepRequeued(exc) from exc
    retryable = isinstance(exc, RETRYABLE) and not isinstance(exc, NOT_RETRYABLE)
    try:
        if (
            isinstance(exc, BudgetExhaustedError)
            and exc.on_budget == "wait"
            and _defer(dispatch, delivery, payload, kwargs, exc)
        ):
            # Acknowledged: parked, not failed, not retried; released when the budget has room.
            raise StepDropped(f"parked until tenant {exc.tenant!r} has budget") from exc
        if retryable and delivery.retries < runtime.settings.task_max_retries:
            _retry(runtime, delivery, kwargs, exc)
        _give_up(dispatch, delivery, payload, kwargs, exc)
    except REDIS_OUTAGE as lost:
        # Neither the retry nor the failure could be written: acknowledged now, the sample would
        # have no outcome. Delivered again, the step meets its error again.
        raise StepRequeued(lost) from exc
    if isinstance(exc, Exception) and not isinstance(exc, CELERY_MISHANDLES):
        raise exc
    raise StepAborted(f"step raised {type(exc).__name__}: {exc}") from exc


def _defer(
    dispatch: Dispatcher,
    delivery: StepDelivery,
    payload: Any,
    kwargs: dict[str, Any],
    exc: BudgetExhaustedError,
) -> bool:
    """Park the step its tenant's spent budget refused; False if its message cannot wait (it fails)."""
    runtime = dispatch.runtime
    deferred = _while_redis_is_full(
        runtime,
        lambda: defer_step(
            runtime,
            exc,
            task_id=delivery.task_id,
            step=_step_name(runtime, kwargs),
            kwargs=kwargs,
            payload=payload,
        ),
    )
    if deferred:
        try:  # the slot it held goes to the next sample admitted; the reconciler's tick does it if not
            admit_more(dispatch, hand_off=True)
        except (AceError, redis.RedisError) as lost:
            logger.warning("admission after parking %s: %s", _step_name(runtime, kwargs), lost)
    return deferred


def _retry(
    runtime: WorkerRuntime, delivery: StepDelivery, kwargs: dict[str, Any], exc: BaseException
) -> NoReturn:
    """Ask for the step to be sent again after its backoff (a retry: this message is acknowledged)."""
    countdown = broker_countdown(
        retry_countdown(delivery.retries, runtime.settings.retry_backoff_seconds), amqp=delivery.amqp
    )
    # The step's name only: the line carries batch_id, sample and skillbook as fields (task_logs.py).
    step = _step_name(runtime, kwargs)
    logger.warning("%s on %s; retry %d in %.1f s", type(exc).__name__, step, delivery.retries + 1, countdown)
    runtime.metrics.observe_retry(step)
    raise StepRetry(exc, countdown, runtime.settings.task_max_retries) from exc


def _while_redis_is_full(runtime: WorkerRuntime, write: Callable[[], T]) -> T:
    """Call ``write`` until Redis has the memory for it, waiting for room between tries."""
    return when_redis_has_room(write, lambda refusals: wait_for_room(runtime, refusals), "a step's write")


def wait_for_room(runtime: WorkerRuntime, waits: int) -> None:
    """Sleep a backoff that grows with ``waits`` (the waits so far), then on while Redis refuses writes.

    The first pause is taken even if Redis takes the probe's small write at once: the step's
    own writes may be larger, and running it again at once would only be refused again.
    """
    backoff = runtime.settings.retry_backoff_seconds
    delay = min(retry_countdown(waits - 1, backoff), MAX_MEMORY_WAIT_SECONDS)
    time.sleep(delay)
    while refuses_writes(runtime.redis, prefix=runtime.settings.queue_prefix):
        waits += 1
        delay = min(retry_countdown(waits - 1, backoff), MAX_MEMORY_WAIT_SECONDS)
        logger.warning("Redis is out of memory (maxmemory); next look in %.1f s", delay)
        time.sleep(delay)


def _give_up(
    dispatch: Dispatcher, delivery: StepDelivery, payload: Any, kwargs: dict[str, Any], exc: BaseException
) -> None:
    """Park the message in the dead-letter list and record the failed sample in its batch.

    A message need not come from a producer of ours: whatever its kwargs hold, it is
    dead-lettered and logged, and its batch is told only if the batch exists.
    """
    runtime = dispatch.runtime
    step = _step_name(runtime, kwargs)
    error = f"{type(exc).__name__}: {exc}"
    sample = _sample_of(kwargs)
    # One line per failure; the traceback once per batch and error kind (failure_logs.py).
    logger.error("%s failed for good: %s", step, failure_line(exc))
    named_batch = sample[0] if sample is not None else None
    if logger.isEnabledFor(logging.DEBUG) and runtime.first_failures.is_first(named_batch, exc):
        kind = type(exc).__name__
        logger.debug("traceback of %s (%s), logged once per batch and error kind", step, kind, exc_info=exc)
    if sample is not None and runtime.batches.outcome(*sample) is not None:
        # A second copy of a sample that already finished (the reconciler sent it again while the
        # first was in flight): its truth is recorded, and a second letter would be retried twice.
        logger.info(
            "%s: sample %s of batch %s already finished; no second dead letter", step, sample[1:], sample[0]
        )
        return
    # Park the message first: once the failure is counted, a waiting producer may look for it.
    _while_redis_is_full(
        runtime,
        lambda: park_dead_letter(
            runtime, task_id=delivery.task_id, step=step, kwargs=kwargs, payload=payload, error=error
        ),
    )
    if sample is None:
        return
    batch_id, epoch, index = sample
    try:
        finished = _while_redis_is_full(
            runtime,
            lambda: runtime.batches.record_failure(
                batch_id,
                epoch,
                index,
                step=step,
                error=error,
                traceback="".join(traceback.format_exception(exc, limit=-3)),
                sample=payload.get("sample") if isinstance(payload, dict) else None,
                step_index=_step_index(kwargs),
            ),
        )
    except BatchNotFoundError:
        # Never created, or expired: the letter is all there is to keep, and it is parked.
        logger.warning(
            "batch %s does not exist: the failure of %s is kept as a dead letter only", batch_id, step
        )
        return
    # A failed sample still finishes its epoch.
    _while_redis_is_full(runtime, lambda: start_next_epoch(dispatch, batch_id, epoch, finished))


def _sample_of(kwargs: dict[str, Any]) -> tuple[str, int, int] | None:
    """The batch id, epoch and index a step message names, or None if it names no sample of ours."""
    batch_id, epoch, index = kwargs.get("batch_id"), kwargs.get("epoch"), kwargs.get("sample_index")
    if isinstance(batch_id, str) and isinstance(epoch, int) and isinstance(index, int):
        return batch_id, epoch, index
    return None


def _step_index(kwargs: dict[str, Any]) -> int | None:
    """The index of the step a message names, for the batch's per-step failures; None if it names none."""
    index = kwargs.get("index")
    return index if isinstance(index, int) and not isinstance(index, bool) and index >= 0 else None


def _step_name(runtime: WorkerRuntime, kwargs: dict[str, Any]) -> str:
    """The step's name for logs and metrics; the recipe name when the message names no known step."""
    recipe, index = kwargs.get("recipe"), kwargs.get("index")
    try:
        route: Route = runtime.routes(recipe)[index]  # type: ignore[arg-type,index]
    except (AceError, ValueError, LookupError, TypeError):
        return f"step {index!r} of recipe {recipe!r}"
    return route.name


def admit_batch(dispatch: Dispatcher, batch_id: object = None) -> int:
    """What ``ace.admit`` does: send a batch's admitted samples (see admission.send_admitted)."""
    if not isinstance(batch_id, str):  # a message need not come from a worker of ours
        logger.warning("ace.admit names no batch (batch_id=%r): dropped", batch_id)
        return 0
    return send_admitted(dispatch, batch_id)


def reconcile_fleet(dispatch: Dispatcher) -> dict[str, Any]:
    """What ``ace.reconcile`` (beat, every ACE_RECONCILE_INTERVAL_SECONDS) does: its report as a dict."""
    report = reconcile_running(dispatch)
    return {
        "batches": report.batches,
        "redriven": report.redriven,
        "given_up": report.given_up,
        "released": report.released,
    }
