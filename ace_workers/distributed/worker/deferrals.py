"""Samples that wait for their tenant's budget: parked when a step is refused, sent on when it has room.

A step whose LLM call raised :class:`~..tenancy.errors.BudgetExhaustedError` for a tenant that
asked to ``wait`` is deferred (:func:`defer_step`): its sample is marked waiting in its batch,
its message parked under the tenant, and the message acknowledged (not failed, not retried,
not held by a worker). :func:`release_deferred` sends the parked steps of every tenant whose
budget has room again (its window reset, or it was raised: ``ace-workers tenant set`` calls
it, and so does beat's reconciler on every tick). Each entry is claimed atomically before it
is sent, so two releasers never send it twice; the sample's progress clock is restarted
before the claim, and its waiting mark stays until its step starts again, so a releaser that
dies between claim and send leaves a sample the reconciler sends again once it looks lost.
The sample runs on from the deferred step (its writes are idempotent; see write_scope.py).
"""

from __future__ import annotations

import logging
from typing import Any

import redis

from ...counts import counted
from ...errors import AceError
from ..store.batches import parse_sample_key
from ..store.budget_waits import WaitingSamples
from ..store.errors import BatchCancelledError, BatchNotFoundError
from ..tenancy.budget_watch import BudgetWatch, LimiterBudgetWatch, ParkedBudgetWatch
from ..tenancy.deferred_samples import DeferredEntry, DeferredSamples
from ..tenancy.errors import BudgetExhaustedError
from ..tenancy.tenants import TenantRegistry, validate_tenant_name
from .admission import sample_parked, sample_released
from .chains import sample_chain
from .dead_letters import park_dead_letter
from .dispatch import Dispatcher
from .errors import BrokerUnavailable
from .finishing import start_next_epoch
from .runtime import WorkerRuntime

__all__ = [
    "DEFERRED_STEP",
    "budget_watch",
    "defer_step",
    "fail_deferred",
    "parked_samples",
    "release_deferred",
    "release_for_batch",
]

logger = logging.getLogger(__name__)

# The step name a dead letter carries for a parked entry that could not be sent again.
DEFERRED_STEP = "DeferredStep"


def _deferrals(runtime: WorkerRuntime) -> DeferredSamples:
    return DeferredSamples(runtime.redis, prefix=runtime.settings.queue_prefix)


def _waiting(runtime: WorkerRuntime) -> WaitingSamples:
    settings = runtime.settings
    return WaitingSamples(
        runtime.redis, prefix=settings.queue_prefix, ttl_seconds=settings.result_ttl_seconds
    )


def defer_step(
    runtime: WorkerRuntime,
    exc: BudgetExhaustedError,
    *,
    task_id: str | None,
    step: str,
    kwargs: dict[str, Any],
    payload: Any,
) -> bool:
    """Park a step message ``exc`` refused and mark its sample waiting; False if it cannot wait.

    It cannot wait when its message names no sample of ours, or names a batch that does not
    exist: then it fails like any other error. True also when there is nothing left to wait
    for (the batch was cancelled, or the sample finished already): the message is dropped.
    """
    named = _step_of(kwargs)
    if named is None or not isinstance(payload, dict):
        return False
    batch_id, epoch, index, step_index = named
    try:
        # Marked first: a waiting sample is never counted as queued or running, and a mark without
        # its entry (a crash in between) is sent again by the reconciler once it looks lost.
        marked = _waiting(runtime).mark(batch_id, epoch, index, tenant=exc.tenant, step=step_index)
    except BatchNotFoundError:
        return False
    except BatchCancelledError:
        logger.info("%s: batch %s was cancelled; the step its budget refused is dropped", step, batch_id)
        return True
    if not marked:
        logger.info(
            "%s: sample e%d:%d of batch %s finished already; nothing waits", step, epoch, index, batch_id
        )
        return True
    parked = _deferrals(runtime).park(exc, task_id=task_id, step=step, kwargs=kwargs, payload=payload)
    sample_parked(runtime, batch_id, epoch, index)  # its admission slot frees while it waits
    # Info, not warning: a spent budget is an expected state (status and the gauges show it), and a
    # batch of thousands would log thousands of lines.
    logger.info(
        "%s waits for budget (%s): tenant %r, model %r, %s spent (%g of %g)",
        step,
        "parked" if parked else "parked already",
        exc.tenant,
        exc.model,
        exc.limit,
        exc.spent,
        exc.budget,
    )
    return True


def _step_of(kwargs: dict[str, Any]) -> tuple[str, int, int, int] | None:
    """(batch id, epoch, sample index, step index) a step message names, or None if it names none."""
    batch_id, epoch, index, step = (
        kwargs.get(name) for name in ("batch_id", "epoch", "sample_index", "index")
    )
    numbers = [
        value for value in (epoch, index, step) if isinstance(value, int) and not isinstance(value, bool)
    ]
    if not isinstance(batch_id, str) or len(numbers) != 3 or min(numbers) < 0:
        return None
    return batch_id, numbers[0], numbers[1], numbers[2]


def release_deferred(
    dispatch: Dispatcher, tenant: str | None = None, *, watch: BudgetWatch | None = None
) -> int:
    """Send again the deferred steps of ``tenant`` (default: every tenant) whose budget has room; how many.

    ``watch`` says whether a tenant's budget has room (default: :class:`ParkedBudgetWatch`, from
    the refusals themselves and the tenants' budgets now). A step whose budget is still spent
    when it runs is refused and parked again, so releasing too early loses nothing.
    """
    runtime = dispatch.runtime
    deferrals = _deferrals(runtime)
    watch = watch or budget_watch(runtime)
    names = [validate_tenant_name(tenant)] if tenant is not None else deferrals.tenants()
    sent = 0
    for name in names:
        if deferrals.count(name) == 0 or not watch.has_room(name):
            continue
        released = sum(_release_one(dispatch, deferrals, name, field) for field in deferrals.fields(name))
        if released:
            logger.info("tenant %r has budget again: %s sent on", name, counted(released, "deferred sample"))
        sent += released
    return sent


def release_for_batch(dispatch: Dispatcher, batch_id: str) -> int:
    """Send on the deferred steps of the tenants ``batch_id``'s waiting samples wait for, where there is room.

    What a reconciliation of one batch does (a waiting producer's): it notices a window that
    reset even where beat does not run. Other batches of those tenants are sent on too.
    """
    tenants = sorted({mark.tenant for mark in _waiting(dispatch.runtime).marks(batch_id)})
    return sum(release_deferred(dispatch, tenant) for tenant in tenants if _valid_tenant(tenant))


def _valid_tenant(name: str) -> bool:
    try:
        validate_tenant_name(name)
    except ValueError:
        return False  # a mark not of ours names no tenant: nothing to release for it
    return True


def budget_watch(runtime: WorkerRuntime) -> BudgetWatch:
    """What tells the releaser a budget has room: the fleet's limiter, or else the refusals themselves.

    The limiter is the runtime's ``limiter`` when it has one that answers ``has_room``; without
    it, :class:`ParkedBudgetWatch` reads the reset time and the spend each refusal reported
    against the tenants' budgets now.
    """
    deferrals = _deferrals(runtime)
    tenants = TenantRegistry(
        runtime.redis, prefix=runtime.settings.queue_prefix
    ).map  # fresh: a raise counts at once
    limiter = getattr(runtime, "limiter", None)
    if limiter is not None and callable(getattr(limiter, "has_room", None)):
        return LimiterBudgetWatch(limiter, deferrals, tenants)
    return ParkedBudgetWatch(deferrals, tenants)


def _release_one(dispatch: Dispatcher, deferrals: DeferredSamples, tenant: str, field: str) -> int:
    """Claim and send one parked entry; 1 if it was sent."""
    runtime = dispatch.runtime
    sample = _sample_of_field(field)
    if sample is not None:
        # Before the claim: the sample must not look lost to the reconciler while it is being sent.
        _waiting(runtime).touch(*sample)
    entry = deferrals.claim(tenant, field)
    if entry is None:
        return 0  # another releaser took it
    if entry.problem is not None:
        _dead_letter(runtime, tenant, entry, entry.problem)
        return 0
    kwargs = entry.kwargs
    batch_id = kwargs["batch_id"]
    try:
        status = runtime.batches.status(batch_id)
    except BatchNotFoundError as exc:
        _dead_letter(runtime, tenant, entry, str(exc))
        return 0
    if status.cancelled:
        logger.info("deferred %s of batch %s dropped: the batch was cancelled", field, batch_id)
        return 0
    try:
        chain = sample_chain(
            dispatch,
            entry.payload,
            recipe=kwargs["recipe"],
            skillbook=kwargs["skillbook"],
            batch_id=batch_id,
            epoch=kwargs["epoch"],
            sample_index=kwargs["sample_index"],
            start=kwargs["index"],
            # The batch's tenant, as it was sent with: not whatever tenant the parked message named.
            tenant=status.tenant,
        )
    except (AceError, ValueError) as exc:
        # This process cannot build the chain (its recipes differ): the entry waits for another releaser.
        deferrals.put_back(tenant, entry)
        logger.warning("deferred %s of tenant %r stays parked: %s", field, tenant, exc)
        return 0
    # Its admission slot back first: should the send fail, it waits holding one, never overfills.
    sample_released(runtime, batch_id, kwargs["epoch"], kwargs["sample_index"])
    try:
        dispatch.send_chain(chain)
    except (BrokerUnavailable, redis.RedisError):
        deferrals.put_back(tenant, entry)
        raise
    return 1


def fail_deferred(dispatch: Dispatcher, tenant: str, reason: str) -> int:
    """Fail every parked step of ``tenant`` as a dead letter saying ``reason``; how many samples failed.

    What ``tenant remove --fail-waiting`` does before the tenant goes: its waiting samples would
    otherwise be sent on as a tenant that owns nothing, and be refused for good. Each letter is
    marked to be retried as its skillbook's owner then (``dead-letters retry``). Each entry is
    claimed first, so a releaser running meanwhile never sends one that was failed.
    """
    runtime = dispatch.runtime
    deferrals = _deferrals(runtime)
    failed = 0
    for field in list(deferrals.fields(tenant)):
        entry = deferrals.claim(tenant, field)
        if entry is None:
            continue  # a releaser took it: it runs on, and is counted as running
        if entry.problem is not None:
            _dead_letter(runtime, tenant, entry, entry.problem)
            continue
        failed += _fail_entry(dispatch, tenant, entry, reason)
    return failed


def _fail_entry(dispatch: Dispatcher, tenant: str, entry: DeferredEntry, reason: str) -> int:
    """Dead-letter a claimed entry (retried as the skillbook's owner) and fail its sample; 1 if it did."""
    runtime = dispatch.runtime
    kwargs = entry.kwargs
    batch_id, epoch, index = kwargs["batch_id"], kwargs["epoch"], kwargs["sample_index"]
    step = entry.data.get("step")
    step_name = step if isinstance(step, str) else DEFERRED_STEP
    task_id = entry.data.get("task_id")
    error = f"deferred step {entry.field!r} of tenant {tenant!r} failed: {reason}"
    park_dead_letter(
        runtime,
        task_id=task_id if isinstance(task_id, str) else None,
        step=step_name,
        kwargs=kwargs,
        payload=entry.payload,
        error=error,
        owner_on_retry=True,
    )
    try:
        if runtime.batches.status(batch_id).cancelled:
            return 0  # its batch runs nothing more; the letter is all that is kept
        sample_released(runtime, batch_id, epoch, index)  # parked, it held no slot: it leaves as it fails
        finished = runtime.batches.record_failure(
            batch_id,
            epoch,
            index,
            step=step_name,
            error=error,
            sample=entry.payload.get("sample"),
            step_index=kwargs["index"],
        )
    except BatchNotFoundError:
        return 0  # expired: the letter is all there is to keep
    start_next_epoch(dispatch, batch_id, epoch, finished)
    return 1


def _sample_of_field(field: str) -> tuple[str, int, int] | None:
    """(batch id, epoch, index) an entry's field names, or None if it names none."""
    parts = field.rsplit("|", 2)
    if len(parts) != 3:
        return None
    try:
        epoch, index = parse_sample_key(parts[1])
    except ValueError:
        return None
    return parts[0], epoch, index


def _dead_letter(runtime: WorkerRuntime, tenant: str, entry: DeferredEntry, problem: str) -> None:
    """Keep an entry that cannot be sent again as a dead letter that says why."""
    error = f"deferred step {entry.field!r} of tenant {tenant!r} cannot be sent again: {problem}"
    logger.error("%s", error)
    step = entry.data.get("step")
    park_dead_letter(
        runtime,
        task_id=None,
        step=step if isinstance(step, str) else DEFERRED_STEP,
        kwargs=entry.kwargs,
        payload=entry.data.get("payload", entry.data),
        error=error,
    )


def parked_samples(runtime: WorkerRuntime, batch_id: str) -> set[tuple[int, int]]:
    """(epoch, index) of the batch's samples that wait for budget with their step parked now.

    A waiting sample whose entry is gone was claimed by a releaser: it is not among them, and
    if it makes no progress the reconciler sends it again like any lost sample.
    """
    deferrals = _deferrals(runtime)
    return {
        (mark.epoch, mark.index)
        for mark in _waiting(runtime).marks(batch_id)
        if deferrals.is_parked(mark.tenant, batch_id, mark.epoch, mark.index, mark.step)
    }
