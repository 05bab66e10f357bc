"""Producers enqueue traces or samples as batches; a BatchHandle follows a batch to the end."""

from __future__ import annotations

import logging
import math
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import redis

from pipeline import SampleResult

from ...core.context import ACEStepContext
from ...redaction.context_redaction import redact_context
from ...redaction.redactor import Redactor
from ...traces.browser_use.history import is_agent_history
from ...traces.browser_use.to_trace import browser_history_to_trace
from ..connections import client_url_for
from ..settings import WorkerSettings, env_name
from ..store.batches import BatchState, BatchStatus
from ..store.keys import SkillbookKeys
from ..store.label_names import SkillbookRef, parse_skillbook_ref
from ..tenancy.api_keys import ApiKeys, authorize
from ..worker.admission import admission_on, resume
from ..worker.app import connect_dispatcher
from ..worker.celery_dispatch import CeleryDispatcher
from ..worker.chains import enqueue_epoch
from ..worker.dispatch import Dispatcher
from ..worker.fleet import check_fleet_agrees
from ..worker.partitions import recorded_partitions
from ..worker.payload import check_trace, context_to_payload, payload_to_context
from ..worker.reconcile import reconcile_batch
from ..worker.redis_health import is_redis_full
from ..worker.runtime import Route, WorkerRuntime
from ..worker.serving import SERVE_LABEL, ServingPlan
from .errors import (
    BatchExistsError,
    BatchSizeError,
    LabelNotServedError,
    NoWorkersError,
    PartitionMismatchError,
    ProducerConfigError,
    RemoteStepError,
    TooManyItemsError,
)
from .fleet_check import require_workers
from .inbox import append_to_inbox

__all__ = ["PROGRESS_LOG_SECONDS", "BatchHandle", "Producer"]

logger = logging.getLogger(__name__)

POLL_SECONDS = 0.05
# How often a waiting caller logs the batch's progress (INFO), so a long wait is never silent.
PROGRESS_LOG_SECONDS = 30.0
# A batch the fleet serves shows it within milliseconds: its steps start and finish. Only once a
# waited-on batch has made no progress for this long is the fleet checked for workers, by an
# inspect broadcast that costs a few tenths of a second (over a hundred waits of the test suite
# paid 35 s for it up front).
WORKER_CHECK_GRACE_SECONDS = 1.0
# How often a waiting producer asks again for workers while its batch makes no progress.
WORKER_CHECK_EVERY_SECONDS = 5.0


@dataclass
class BatchProgress:
    """A batch status with the number of skills the batch added so far."""

    status: BatchStatus
    skills_added: int


class BatchHandle:
    """Follow one batch: status, wait, results, errors.

    Given a dispatcher, ``wait`` also runs the reconciler every
    ACE_RECONCILE_INTERVAL_SECONDS, so a waiting producer sends lost samples
    again even where no beat runs.
    """

    def __init__(self, batch_id: str, runtime: WorkerRuntime, dispatcher: Dispatcher | None = None) -> None:
        self.batch_id = batch_id
        self.runtime = runtime
        self.dispatcher = dispatcher

    def status(self) -> BatchStatus:
        """Counts: total, enqueued, done, failed, in flight, epoch, elapsed."""
        return self.runtime.batches.status(self.batch_id)

    def progress(self) -> BatchProgress:
        """The status plus how many skills the skillbook gained since the batch started."""
        status = self.status()
        skills = len(self.runtime.skillbook(status.skillbook))
        return BatchProgress(status, skills - status.skills_at_start)

    def wait(
        self,
        timeout: float | None = None,
        *,
        check_workers: bool = True,
        progress_seconds: float = PROGRESS_LOG_SECONDS,
    ) -> BatchStatus:
        """Block until every sample of every epoch finished (or the batch was cancelled); TimeoutError.

        A batch that has made no progress for WORKER_CHECK_GRACE_SECONDS is checked for workers
        (given the dispatcher, and unless ``check_workers`` is false), again every
        WORKER_CHECK_EVERY_SECONDS while it stays still. A queue with no worker is a gap a worker
        restarting or starting from zero fills: one warning names the queues, and only a gap of
        ACE_WORKER_WAIT_SECONDS raises NoWorkersError.
        While it waits it logs the batch's progress at INFO every ``progress_seconds``.
        """
        began, began_at = time.monotonic(), time.time()
        deadline = None if timeout is None else began + timeout
        reconcile_at = time.monotonic() + self.runtime.settings.reconcile_interval_seconds
        log_at = time.monotonic() + progress_seconds
        finished = "no count read"
        workers = _WorkerGap(self.dispatcher if check_workers else None, self.runtime.settings)
        while True:
            try:
                status = self.status()
                if status.state is not BatchState.RUNNING:  # done, or cancelled
                    return status
                if time.time() - max(status.progress_at, began_at) >= WORKER_CHECK_GRACE_SECONDS:
                    workers.check(status.recipe, status.skillbook)
                finished = f"{status.done + status.failed} of {status.total} samples finished"
                if time.monotonic() >= log_at:
                    _log_progress(status)
                    log_at = time.monotonic() + progress_seconds
                if self.dispatcher is not None and time.monotonic() > reconcile_at:
                    reconcile_batch(self.dispatcher, self.batch_id)
                    reconcile_at = time.monotonic() + self.runtime.settings.reconcile_interval_seconds
            except redis.ResponseError as exc:
                # A full Redis refuses even a MULTI of reads. Its workers wait for room; so does this.
                if not is_redis_full(exc):
                    raise
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"batch {self.batch_id}: {finished} after {timeout} s")
            time.sleep(POLL_SECONDS)

    def results(self) -> list[SampleResult[ACEStepContext]]:
        """One SampleResult per finished sample, in epoch then input order."""
        records = self.runtime.batches.records(self.batch_id)

        def order(key: str) -> tuple[int, int]:
            epoch, index = key[1:].split(":")
            return int(epoch), int(index)

        results = []
        for key in sorted(records, key=order):
            record = records[key]
            if record["outcome"] == "done":
                ctx = payload_to_context(record["payload"], skillbook=None, claims=self.runtime.claims)
                results.append(SampleResult(ctx.sample, ctx, None, None))
            else:
                error = RemoteStepError(record["step"], record["error"], record.get("traceback", ""))
                results.append(SampleResult(record.get("sample"), None, error, record["step"]))
        return results

    def errors(self) -> list[dict[str, Any]]:
        """The failed samples: epoch, index, step, error and traceback summary."""
        return self.runtime.batches.errors(self.batch_id)


class _WorkerGap:
    """A waiting producer's view of the workers: asks every WORKER_CHECK_EVERY_SECONDS at most, warns
    once when a queue has none, and raises NoWorkersError once none has served it for
    ACE_WORKER_WAIT_SECONDS."""

    def __init__(self, dispatcher: Dispatcher | None, settings: WorkerSettings) -> None:
        self._dispatcher = dispatcher
        self._patience = settings.worker_wait_seconds
        self._asked_at = -math.inf
        self._missing_since: float | None = None

    def check(self, recipe: str, skillbook: str) -> None:
        """Ask for workers if it is time; NoWorkersError once a gap outlasts ACE_WORKER_WAIT_SECONDS."""
        now = time.monotonic()
        if self._dispatcher is None or now - self._asked_at < WORKER_CHECK_EVERY_SECONDS:
            return
        self._asked_at = now
        try:
            require_workers(self._dispatcher, recipe, skillbook)
        except NoWorkersError as exc:
            if self._missing_since is None:
                self._missing_since = now
                logger.warning(
                    "%s; waiting up to %g s (ACE_WORKER_WAIT_SECONDS) for one to start",
                    exc,
                    self._patience,
                )
            elif now - self._missing_since >= self._patience:
                raise NoWorkersError(
                    f"{exc} (no worker came for {self._patience:g} s, ACE_WORKER_WAIT_SECONDS)",
                    queues=exc.queues,
                ) from None
            return
        if self._missing_since is not None:
            logger.warning("workers serve every queue again; the batch goes on")
            self._missing_since = None


def _log_progress(status: BatchStatus) -> None:
    logger.info(
        "batch %s: %d done, %d failed, %d queued of %d after %.0f s",
        status.batch_id,
        status.done,
        status.failed,
        status.queued,
        status.total,
        status.elapsed_seconds,
    )


class Producer:
    """Turns inputs into sample chains on the queues, as one tracked batch.

    ``Producer(settings)`` (or ``Producer.from_env()``) connects to
    ``settings.redis_url`` (ACE_REDIS_URL) and needs nothing else: no worker
    runtime of the caller's, no task registration. A service that already has
    a dispatcher (its Celery app and runtime) passes it in, and the producer then
    leaves its connections to their owner. Use it as a context manager, or call close().

    ``api_key`` (default ACE_API_KEY): a scoped key (``ace-workers key create``); every enqueue
    then authenticates it and refuses, before anything is sent, a skillbook its tenant does not
    own (ForeignSkillbookError) or a key whose role is below ``learn`` (RoleTooLowError); an
    unknown or revoked key raises InvalidApiKeyError.
    """

    def __init__(
        self,
        settings: WorkerSettings,
        *,
        dispatcher: Dispatcher | None = None,
        api_key: str | None = None,
    ) -> None:
        owned: CeleryDispatcher | None = None
        if dispatcher is None:
            redis_url = settings.redis_url
            if not redis_url:
                raise ProducerConfigError(
                    f"a Producer needs a Redis URL: set {env_name('redis_url')} "
                    "(or pass redis_url= in WorkerSettings)"
                )
            runtime = WorkerRuntime(settings, client_url_for(redis_url))
            # The broker: ACE_BROKER_URL, else the Redis.
            dispatcher = owned = connect_dispatcher(settings, runtime, redis_url=redis_url)
        self._owned = owned
        self.settings = settings
        self.runtime = dispatcher.runtime
        # What the batch's samples are sent through (worker/dispatch.py).
        self.dispatcher = dispatcher
        # Kept private, and out of every message and log line: only its id is ever named.
        self._api_key = api_key or settings.api_key

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Producer:
        """A producer configured by the ACE_* environment variables (ACE_REDIS_URL required)."""
        return cls(WorkerSettings.from_env(environ))

    def close(self) -> None:
        """Release the Redis connections this producer opened (none when it was given a dispatcher)."""
        if self._owned is not None:
            self.runtime.close()
            self._owned.close()

    def __enter__(self) -> Producer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def enqueue_traces(
        self,
        traces: Iterable[Any],
        skillbook: str,
        epochs: int = 1,
        *,
        recipe: str = "trace_analyser",
        max_in_flight: int | None = None,
        batch_id: str | None = None,
        count: int | None = None,
        canary: float | None = None,
    ) -> BatchHandle:
        """Learn from recorded traces (TraceAnalyser's chain by default).

        A browser-use ``AgentHistoryList`` among the traces is sent as its trace
        dict (:func:`~ace_workers.traces.browser_history_to_trace`).

        ``batch_id`` (default: a new uuid) lets a caller that records the id
        before sending, like the nightly job, find the batch again after a crash.
        ``count`` declares how many items an iterator will yield (see ``_enqueue``).
        ``skillbook`` may name a label (``support@prod``) and ``canary`` a share, for a
        recipe that runs an agent: see :meth:`enqueue_samples`.
        """
        max_bytes = self.runtime.settings.max_trace_bytes

        def contexts(items: Iterable[Any]) -> Iterable[ACEStepContext]:
            for item in items:
                trace = as_trace(item)
                check_trace(trace, max_bytes=max_bytes)
                yield ACEStepContext(trace=trace)

        return self._enqueue(
            traces, contexts, skillbook, epochs, recipe, max_in_flight, batch_id, count, canary
        )

    def append_to_inbox(self, traces: Iterable[Any], skillbook: str) -> int:
        """Keep traces in the skillbook's inbox for its next nightly run; return how many were added.

        An ``AgentHistoryList`` is kept as its trace dict, as in :meth:`enqueue_traces`.
        """
        self._check_key(skillbook)
        keys = SkillbookKeys(skillbook, self.runtime.settings.queue_prefix)
        redactor = self.runtime.skillbook_redactor(skillbook)
        return append_to_inbox(
            self.runtime.redis,
            keys,
            (as_trace(trace) for trace in traces),
            redactor=redactor,
            max_trace_bytes=self.runtime.settings.max_trace_bytes,
        )

    def enqueue_samples(
        self,
        samples: Iterable[Any],
        skillbook: str,
        epochs: int = 1,
        *,
        recipe: str = "ace",
        max_in_flight: int | None = None,
        batch_id: str | None = None,
        count: int | None = None,
        canary: float | None = None,
    ) -> BatchHandle:
        """Answer and learn from samples (ACE's chain by default); ``batch_id`` and ``count`` as in
        enqueue_traces.

        ``skillbook="support@prod"``: the agent is served label ``prod``'s version while
        learning writes ``support``'s head (``support`` alone: ACE_SERVE_LABEL's label, else
        the head). ``canary`` (default ACE_CANARY_SHARE): that share of the samples is served
        by label ``canary`` instead, the same samples on every delivery. Each label must
        exist (UnknownLabelError) before anything is sent.
        """
        return self._enqueue(
            samples,
            lambda items: (ACEStepContext(sample=s) for s in items),
            skillbook,
            epochs,
            recipe,
            max_in_flight,
            batch_id,
            count=count,
            canary=canary,
        )

    def resume(self, batch_id: str) -> int:
        """Send what a batch has not sent of its current epoch (or the next, once that one finished).

        For a batch whose sender died mid-send: its stored inputs are sent from its
        ``enqueued`` count on (:func:`~ace_workers.distributed.worker.epochs.resume_batch`); with
        admission on, up to what is admitted (:func:`~ace_workers.distributed.worker.admission.resume`).
        Returns how many samples were sent; 0 for a batch with nothing left to send.
        """
        if self._api_key is not None:
            self._check_key(self.runtime.batches.status(batch_id).skillbook)
        return resume(self.dispatcher, batch_id)

    def _check_key(self, skillbook: str) -> None:
        """With an API key: it must authenticate, its tenant own ``skillbook``, its role reach learn."""
        if self._api_key is None:
            return
        runtime = self.runtime
        record = ApiKeys(runtime.redis, prefix=runtime.settings.queue_prefix).require(self._api_key)
        # Read now, not from the cache: a key is checked against who owns the skillbook this moment.
        authorize(record.scope, "learn", skillbook, runtime.tenants.registry.map())

    def _enqueue(
        self,
        items: Iterable[Any],
        to_contexts: Any,
        skillbook: str,
        epochs: int,
        recipe: str,
        max_in_flight: int | None,
        batch_id: str | None = None,
        count: int | None = None,
        canary: float | None = None,
    ) -> BatchHandle:
        """Send ``items`` as one batch of at most ACE_MAX_BATCH_SIZE samples (inputs x epochs).

        A Sequence is checked against the limit before anything is sent. An
        iterator may declare its ``count``: it is checked up front and the
        batch's total is known from the start. Either way an iterator that
        yields more (than its count, or the limit) raises BatchSizeError once
        that many were sent, saying so; the rest are never sent.
        """
        ref = parse_skillbook_ref(skillbook)  # NAME or NAME@LABEL: learning writes NAME's head
        skillbook = ref.name
        self._check_key(skillbook)  # first: a refused key learns nothing about the fleet
        if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 1:
            raise ValueError(f"epochs must be an int of at least 1, got {epochs!r}")
        limit = self.runtime.settings.max_batch_size
        count = _declared_count(items, count)
        if epochs > 1 and count is None:
            # Later epochs are sent from the inputs the batch stores as epoch 1 goes out, so
            # an iterator is read once; but each epoch's size must be known up front.
            raise ValueError(f"{epochs} epochs need a Sequence of inputs or an iterator's declared count")
        if count is not None and count * epochs > limit:
            times = f" x {epochs} epochs = {count * epochs} samples" if epochs > 1 else ""
            raise BatchSizeError(
                f"batch of {count} inputs{times} is above max_batch_size={limit} (ACE_MAX_BATCH_SIZE); "
                "nothing was sent",
                limit=limit,
            )
        # First what is cheap to check: a worker with other recipe settings would fail every sample.
        check_fleet_agrees(self.runtime, recipe)
        # An unknown recipe fails here, before anything is sent; so does a label it cannot serve. The
        # routes come from the recipe's step classes: no role, LLM client or embedder is built here.
        routes = self.runtime.routes(recipe)
        serving = self._serving_plan(ref, canary, recipe, routes)
        self._check_partitions()
        batch_id = batch_id or uuid.uuid4().hex
        if self.runtime.batches.exists(batch_id):
            raise BatchExistsError(batch_id)
        per_epoch = count or 0
        most = limit if count is None else count
        bounded = items if isinstance(items, Sequence) else _at_most(items, most)
        tenant = self.runtime.tenants.tenant_of(skillbook)
        # Redacted here, before anything of it is stored (the batch's items, a claim) or sent.
        redactor = self.runtime.redactor(tenant)
        first = self._payloads(to_contexts(bounded), epochs, per_epoch, batch_id, serving, redactor)
        self.runtime.batches.create(
            batch_id,
            skillbook=skillbook,
            recipe=recipe,
            per_epoch=per_epoch,
            epochs=epochs,
            skills_at_start=len(self.runtime.skillbook(skillbook)),
            tenant=tenant,
        )
        handle = BatchHandle(batch_id, self.runtime, self.dispatcher)
        # Every input is stored before the first is sent: a producer that dies while sending
        # leaves a batch the reconciler finishes from its stored inputs. Read back a chunk at a
        # time, the producer's memory stays that of one chunk whatever the batch's size.
        batches, overflow = self.runtime.batches, False
        try:
            stored = batches.store_items(batch_id, first)
        except TooManyItemsError:
            overflow, stored = True, most  # the first `most` were stored: they make the batch
        except BaseException:
            batches.cancel(batch_id)  # a bad input or a lost connection: nothing was sent
            raise
        if stored != per_epoch:
            # Unknown length (or fewer than declared, which would leave the batch waiting forever).
            batches.seal(batch_id, stored)
        sent = self._send_first_epoch(handle, recipe, skillbook, max_in_flight, stored, tenant)
        if overflow:
            # The batch is what was stored, so it finishes; the caller learns what was left out.
            bound = f"max_batch_size={limit} (ACE_MAX_BATCH_SIZE)" if count is None else f"its count {count}"
            raise BatchSizeError(
                f"batch {batch_id}: the input yielded more than {bound}; the first {most} inputs were "
                "sent as this batch, the rest were not sent",
                limit=most,
                sent=most,
                batch_id=batch_id,
            )
        if count is not None and sent < count:
            raise BatchSizeError(
                f"batch {batch_id}: the input declared {count} inputs but yielded {sent}; those {sent} "
                "were sent as this batch",
                limit=count,
                sent=sent,
                batch_id=batch_id,
            )
        return handle

    def _send_first_epoch(
        self,
        handle: BatchHandle,
        recipe: str,
        skillbook: str,
        max_in_flight: int | None,
        stored: int,
        tenant: str,
    ) -> int:
        """Send (or, with admission on, open for admission) the first epoch of a stored batch; its size."""
        batch_id = handle.batch_id
        if admission_on(self.runtime):
            # Its samples go out as the fleet's window has room for them, fairly between tenants
            # (worker/admission.py); max_in_flight caps the batch's samples in flight there.
            resume(self.dispatcher, batch_id, epoch=1, cap=max_in_flight or 0)
            return stored
        return enqueue_epoch(
            self.dispatcher,
            self._throttled(self.runtime.batches.iter_items(batch_id), handle, max_in_flight),
            recipe=recipe,
            skillbook=skillbook,
            batch_id=batch_id,
            epoch=1,
            tenant=tenant,
        )

    def _check_partitions(self) -> None:
        """PartitionMismatchError if the workers recorded another write-partition count than ours."""
        settings = self.runtime.settings
        recorded = recorded_partitions(self.runtime.redis, settings)
        if recorded is not None and recorded != settings.write_partitions:
            raise PartitionMismatchError(settings.write_partitions, recorded)

    def _serving_plan(
        self, ref: SkillbookRef, canary: float | None, recipe: str, routes: Sequence[Route]
    ) -> ServingPlan:
        """Which labels serve the batch: the reference's (else ACE_SERVE_LABEL's) and a canary share.

        A label named outright, or a canary share, for a recipe whose steps run no agent is a
        LabelNotServedError (nothing would read it); the settings' defaults then simply do not apply.
        Every label served must exist: UnknownLabelError, naming the labels there are.
        """
        settings = self.runtime.settings
        if not any(route.serves_skillbook for route in routes):
            asked = ServingPlan(ref.label, canary or 0.0)
            if asked.serves_label:
                raise LabelNotServedError(recipe, asked.labels())
            return asked
        plan = ServingPlan(
            ref.label or settings.serve_label, settings.canary_share if canary is None else canary
        )
        labels = self.runtime.store(ref.name).labels
        for label in plan.labels():
            labels.require(label)
        return plan

    def _payloads(
        self,
        contexts: Iterable[ACEStepContext],
        epochs: int,
        total: int,
        batch_id: str,
        serving: ServingPlan,
        redactor: Redactor,
    ) -> Iterable[dict[str, Any]]:
        for index, ctx in enumerate(contexts, start=1):
            # Every path into the fleet (enqueue, intake, MCP, the console, hooks, nightly) comes
            # through here: the one place a trace or sample is redacted before it is stored.
            ctx = redact_context(redactor, ctx)
            # The label serving this sample travels in its payload: every epoch and re-send reads it.
            label = serving.label_for(batch_id, index)
            if label is not None:
                ctx = ctx.replace(metadata={**ctx.metadata, SERVE_LABEL: label})
            ctx = ctx.replace(
                epoch=1,
                total_epochs=epochs,
                step_index=index,
                total_steps=total or None,
                global_sample_index=index,
            )
            yield context_to_payload(ctx, claims=self.runtime.claims)

    @staticmethod
    def _throttled(
        payloads: Iterable[dict[str, Any]], handle: BatchHandle, max_in_flight: int | None
    ) -> Iterable[dict[str, Any]]:
        # Back-pressure: never more than max_in_flight samples of this batch on the queues.
        for sent, payload in enumerate(payloads):
            while max_in_flight is not None and sent >= max_in_flight:
                status = handle.status()
                if sent - status.done - status.failed < max_in_flight:
                    break
                time.sleep(POLL_SECONDS)
            yield payload


def _at_most(items: Iterable[Any], most: int) -> Iterator[Any]:
    """``items``, raising TooManyItemsError when item ``most + 1`` arrives, before it is sent."""
    for number, item in enumerate(items, start=1):
        if number > most:
            raise TooManyItemsError
        yield item


def _declared_count(items: Iterable[Any], count: int | None) -> int | None:
    """How many items the batch will hold: a Sequence's length, else the declared count (or None)."""
    if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 0):
        raise ValueError(f"count must be a non-negative int, got {count!r}")
    if not isinstance(items, Sequence):
        return count
    if count is not None and count != len(items):
        raise ValueError(f"count={count} but the Sequence holds {len(items)} inputs")
    return len(items)


def as_trace(item: Any) -> Any:
    """``item`` as a trace the workers can read: a browser-use ``AgentHistoryList`` (a live pydantic
    object, not JSON) becomes its trace dict; anything else is left as it is, to be checked."""
    return browser_history_to_trace(item) if is_agent_history(item) else item
