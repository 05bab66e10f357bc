"""Sending what admission grants: a batch's samples go out as the fleet-wide window has room.

With ACE_ADMISSION_WINDOW above 0 nothing sends a batch's samples outright. A batch is *opened*
(its inputs stored, or its next epoch due) up to the end of its open epoch, and the scheduler
(:mod:`~ace_workers.distributed.tenancy.admission_scheduler`) grants slots fairly between tenants; each grant
is recorded in Redis (the batch's admitted count) before the samples go. Admission is asked for more
when a batch is opened (producer, epoch start), when a sample leaves flight (its last step, or its
failure: :func:`sample_left`), and on the reconciler's tick (:func:`tend_admission`). A sample
leaving flight frees its slot and asks in one round trip, and is granted only once half the window
is free (:func:`grant_chunk`): the grant, its hand-off task and its sender's lock and reads are then
shared by a chunk of samples (a grant per finishing sample cost a quarter or more of one tenant's
throughput in benchmarks/fairness.py). While one tenant alone has work, most finishes do not
make even that round trip: they change no grant, and the batch's finish script answers them quiet
against a mark admission left in the batch's record (:func:`sample_left`); an opening batch has
them told first. Whoever was granted a sample may have to send another
tenant's batch: the chain is built from that batch's record and stored inputs, as
:func:`~.epochs.resume_batch` does.

A sender that dies after its grant is healed: :func:`send_admitted` sends a batch's samples from
its ``enqueued`` count up to its admitted count, under the batch's epoch-start lock, and looks again
after letting go of the lock (a grant made while it held it was left to it). The reconciler's tick
calls it for every batch admission knows. With the window at 0 this module passes everything to
:func:`~.epochs.resume_batch`, which sends whole epochs as before.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections import OrderedDict

import redis

from ...errors import AceError
from ..store.batches import BatchState, BatchStatus, SampleFinish, sample_key
from ..store.errors import BatchNotFoundError
from ..tenancy.admission_scheduler import Grant
from .dispatch import Dispatcher
from .epochs import current_epoch, epoch_lock_seconds, resume_batch, send_samples
from .errors import BrokerUnavailable
from .runtime import WorkerRuntime
from .task_names import ADMIT_TASK

__all__ = [
    "ADMIT_TASK",
    "GRANT_CHUNKS",
    "admission_on",
    "admit_more",
    "grant_chunk",
    "leave_flight",
    "reenter_flight",
    "resume",
    "sample_left",
    "sample_parked",
    "sample_released",
    "send_admitted",
    "tend_admission",
]

logger = logging.getLogger(__name__)

# A finishing sample grants only once 1/GRANT_CHUNKS of the window is free (see grant_chunk).
GRANT_CHUNKS = 2

# How many batches' first-step queues a process remembers for its hand-offs.
_REMEMBERED_BATCHES = 1024

# What admitting more may meet that must not fail the step (or reconciler pass) that asked:
# the grant stays recorded, and the reconciler's tick sends it.
_ADMIT_ERRORS = (AceError, redis.RedisError, BrokerUnavailable)


def admission_on(runtime: WorkerRuntime) -> bool:
    """True when samples are admitted through the window (ACE_ADMISSION_WINDOW above 0)."""
    return runtime.settings.admission_window > 0


def resume(dispatch: Dispatcher, batch_id: str, *, epoch: int | None = None, cap: int | None = None) -> int:
    """Open a batch's epoch for admission and send what is admitted; return how many samples were sent.

    ``epoch`` defaults to where the batch stands (:func:`~.epochs.current_epoch`); ``cap``: most of
    the batch's samples in flight at once (a producer's ``max_in_flight``; None keeps what was set).
    With admission off, the rest of the epoch is sent at once (:func:`~.epochs.resume_batch`).
    """
    runtime = dispatch.runtime
    if not admission_on(runtime):
        return resume_batch(dispatch, batch_id, epoch=epoch)
    status = runtime.batches.status(batch_id)
    if status.state is not BatchState.RUNNING:
        runtime.admission.forget(batch_id)
        return 0
    if epoch is None:
        epoch = current_epoch(runtime.batches, status)
    if not status.fully_stored:
        return resume_batch(dispatch, batch_id, epoch=epoch)  # says what to do, sends nothing
    if epoch > status.epochs:
        return 0
    runtime.admission.open(
        batch_id, tenant=status.tenant, limit=epoch * status.per_epoch, per_epoch=status.per_epoch, cap=cap
    )
    _end_quiet(runtime)
    # A fair grant first; then what was granted to this batch before and never sent (its sender died).
    return admit_more(dispatch) + send_admitted(dispatch, batch_id)


def admit_more(dispatch: Dispatcher, *, hand_off: bool = False) -> int:
    """Grant the free slots of the window and send the samples granted; return how many were sent.

    ``hand_off``: leave the sending to an ``ace.admit`` task on the queue of the batch's first step
    (what a finishing step does: the last step of a recipe often runs on a single-thread write
    worker, whose time is the fleet's bottleneck; building and sending another batch's chain there
    would slow every tenant), and grant only once a chunk of slots is free (:func:`grant_chunk`),
    so that one hand-off sends several samples. A batch that cannot be sent now (its recipe unknown
    here, Redis or the broker away) is logged and left admitted: the reconciler's tick sends it.
    """
    runtime = dispatch.runtime
    if not admission_on(runtime):
        return 0
    window = runtime.settings.admission_window
    grants = runtime.admission.admit(
        window, runtime.tenants.current().tenants, least=grant_chunk(window) if hand_off else 1
    )
    return _send_grants(dispatch, grants, hand_off=hand_off)


def grant_chunk(window: int) -> int:
    """The free slots a finishing sample waits for before granting: one in ``GRANT_CHUNKS`` of the window.

    Granting a slot the moment it frees costs a grant, a hand-off task and a sender's lock per
    sample; waiting for a chunk shares those between its samples, and keeps the window nearly full.
    """
    return max(1, window // GRANT_CHUNKS)


def _send_grants(dispatch: Dispatcher, grants: list[Grant], *, hand_off: bool) -> int:
    """Send (or hand off the sending of) what each grant admitted; return how many were sent here."""
    sent = 0
    for grant in grants:
        try:
            if hand_off:
                _hand_off(dispatch, grant.batch_id)
            else:
                sent += send_admitted(dispatch, grant.batch_id)
        except _ADMIT_ERRORS as exc:
            logger.warning(
                "batch %s: admitted samples not sent (%s: %s); the reconciler sends them",
                grant.batch_id,
                type(exc).__name__,
                exc,
            )
    return sent


def _hand_off(dispatch: Dispatcher, batch_id: str) -> None:
    """Ask a worker of the batch's first step to send what the batch was granted (``ace.admit``).

    Its queue is known from the batch's recipe and skillbook, which never change: read once per
    batch in this process. Whether the batch still runs is the sender's to check.
    """
    runtime = dispatch.runtime
    queue = _first_queues(runtime).get(batch_id)
    if queue is None:
        status = _running_status(runtime, batch_id)
        if status is None:
            return
        routes = runtime.routes(status.recipe)
        queue = runtime.queue(routes[0].queue_role, status.skillbook)
        _first_queues(runtime).put(batch_id, queue)
    dispatch.hand_off(batch_id, queue)


class _RecentQueues:
    """The first step's queue of the batches this process handed off lately (at most ``size``)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._queues: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, batch_id: str) -> str | None:
        """The batch's queue, if known here."""
        with self._lock:
            return self._queues.get(batch_id)

    def put(self, batch_id: str, queue: str) -> None:
        """Remember the batch's queue, forgetting the oldest beyond ``size``."""
        with self._lock:
            self._queues[batch_id] = queue
            while len(self._queues) > self.size:
                self._queues.popitem(last=False)


_QUEUES: weakref.WeakKeyDictionary[WorkerRuntime, _RecentQueues] = weakref.WeakKeyDictionary()
_QUEUES_LOCK = threading.Lock()


def _first_queues(runtime: WorkerRuntime) -> _RecentQueues:
    """The runtime's remembered first-step queues (per runtime: its prefix and routes are its own)."""
    with _QUEUES_LOCK:
        queues = _QUEUES.get(runtime)
        if queues is None:
            queues = _QUEUES[runtime] = _RecentQueues(_REMEMBERED_BATCHES)
        return queues


def send_admitted(dispatch: Dispatcher, batch_id: str) -> int:
    """Send a batch's samples from its ``enqueued`` count up to its admitted count; return how many.

    Under the batch's epoch-start lock, so two senders never send the same sample. A sender that
    finds the lock taken leaves its grant to the holder, who looks again after letting go. A batch
    no longer running (done, cancelled, expired) is dropped from admission.
    """
    runtime = dispatch.runtime
    sent = 0
    while True:
        status = _running_status(runtime, batch_id)
        if status is None:
            return sent
        if runtime.admission.admitted(batch_id) <= status.enqueued or status.per_epoch <= 0:
            return sent
        epoch = status.enqueued // status.per_epoch + 1
        with runtime.batches.epoch_start_lock(batch_id, epoch, epoch_lock_seconds(runtime.settings)) as held:
            if not held:
                return sent  # its holder looks at the admitted count again once it lets go
            more, reached = _send_locked(dispatch, batch_id, epoch)
        sent += more
        # A grant made while the lock was held was left to this sender: one more look, the admitted
        # count alone while nothing lies beyond what was sent.
        if reached is None or runtime.admission.admitted(batch_id) <= reached:
            return sent


def _send_locked(dispatch: Dispatcher, batch_id: str, epoch: int) -> tuple[int, int | None]:
    """Send ``epoch``'s samples up to the admitted count, holding its epoch-start lock.

    Returns how many were sent and the batch's ``enqueued`` count after them (None: it no longer
    runs, ``epoch`` is past its last, or inputs were missing: nothing more to send here).
    """
    runtime = dispatch.runtime
    status = _running_status(runtime, batch_id)  # counted again under the lock
    if status is None or status.per_epoch <= 0:
        return 0, None
    admitted = runtime.admission.admitted(batch_id)
    before = (epoch - 1) * status.per_epoch  # samples of the earlier epochs (a sealed batch's size is fixed)
    first = status.enqueued - before + 1
    # An epoch opens only once the one before finished: what is admitted lies in this epoch, and
    # the next epoch's samples are sent under its own lock.
    last = min(status.per_epoch, admitted - before)
    if epoch > status.epochs or first < 1:
        return 0, None
    if last < first:
        return 0, status.enqueued  # all of this epoch's grants sent: the next look finds the next epoch's
    sent = send_samples(dispatch, status, epoch=epoch, first=first, last=last)
    # Fewer inputs than asked for: the reconciler names the batch's missing inputs, not this loop.
    return sent, status.enqueued + sent if sent == last - first + 1 else None


def _running_status(runtime: WorkerRuntime, batch_id: str) -> BatchStatus | None:
    """The batch's status while it runs; None (and the batch dropped from admission) once it does not."""
    try:
        status = runtime.batches.status(batch_id)
    except BatchNotFoundError:
        runtime.admission.forget(batch_id)
        return None
    if status.state is not BatchState.RUNNING:
        runtime.admission.forget(batch_id)
        return None
    return status


def sample_left(dispatch: Dispatcher, batch_id: str, epoch: int, finish: SampleFinish | None) -> None:
    """A sample finished or failed; ``finish`` is its finish script's answer (None: counted before).

    Its slot frees (once, however often the same finish is told) and, in the same round trip, the
    window's free slots are granted once a chunk is free (:func:`grant_chunk`); the sending of what
    was granted is handed off (see :func:`admit_more`). A quiet finish is not told at all: while
    its tenant alone has work it changes no grant, and a later finish of its batch, counted past
    admission's mark, tells the count it reached (see :func:`_mark_quiet`).
    """
    runtime = dispatch.runtime
    if not admission_on(runtime):
        return
    if finish is None:
        admit_more(dispatch, hand_off=True)
        return
    if finish.quiet:
        return
    window = runtime.settings.admission_window
    left = runtime.admission.leave_and_admit(
        batch_id,
        epoch=epoch,
        finished=finish.finished,
        window=window,
        tenants=runtime.tenants.current().tenants,
        least=grant_chunk(window),
    )
    if left.flying == 0:
        _running_status(runtime, batch_id)  # its last sample: a batch done is dropped from admission
    if left.quiet_until:
        _mark_quiet(runtime, batch_id, left.quiet_until)
    _send_grants(dispatch, left.grants, hand_off=True)


def _mark_quiet(runtime: WorkerRuntime, batch_id: str, until: int) -> None:
    """Let the batch's finishes up to ``until`` (over all epochs) go untold: admission's mark.

    Kept in the batch's record, where its finish script counts finishes atomically whichever worker
    process runs them, so the finish that frees a chunk is told however the finishes are spread
    over processes. A mark that fails to be kept only costs round trips: every finish is told.
    """
    try:
        runtime.batches.quiet_finishes(batch_id, until)
    except redis.RedisError as exc:
        logger.warning("batch %s: finishes stay told (%s: %s)", batch_id, type(exc).__name__, exc)


def _end_quiet(runtime: WorkerRuntime) -> None:
    """A batch opened: the batches whose finishes went untold tell admission what they reached.

    Their untold finishes freed slots the opened batch (a newcomer tenant's, or its own tenant's)
    is owed at once, as when every finish was told; from now on their finishes are told until a
    finish is given a new mark (none while two tenants have work). Only the batches admission
    marked are asked: an open costs one round trip more while none is.
    """
    for batch_id in runtime.admission.take_quiet():
        _tell_quiet_finishes(runtime, batch_id)


def _tell_quiet_finishes(runtime: WorkerRuntime, batch_id: str) -> None:
    """End the batch's mark, if it has one, and tell admission the finished count it reached."""
    ended = runtime.batches.end_quiet(batch_id)
    if ended is not None:
        epoch, finished = ended
        runtime.admission.leave_flight(batch_id, epoch=epoch, finished=finished)


def leave_flight(
    dispatch: Dispatcher,
    batch_id: str,
    *,
    epoch: int,
    finished: int | None,
    sample: str = "",
) -> int:
    """A sample left flight: it finished or failed (``finished``: the finish script's count of ``epoch``),
    or it was parked waiting for budget (``finished`` None); its slot goes to the next sample admitted.

    The seam for whoever parks a sample: call this as it is parked, with ``sample`` its key
    (``sample_key(epoch, index)``: told twice, it is counted once), and :func:`reenter_flight` as it
    is released. Returns how many samples were sent in the freed slot.
    """
    runtime = dispatch.runtime
    if not admission_on(runtime):
        return 0
    runtime.admission.leave_flight(batch_id, epoch=epoch, finished=finished, sample=sample)
    return admit_more(dispatch)


def reenter_flight(runtime: WorkerRuntime, batch_id: str, *, sample: str = "") -> None:
    """A sample parked waiting for budget was released and runs again: it holds a slot once more.

    ``sample``: its key (``sample_key(epoch, index)``), as given to :func:`leave_flight`.
    """
    if admission_on(runtime):
        runtime.admission.reenter_flight(batch_id, sample=sample)


def sample_parked(runtime: WorkerRuntime, batch_id: str, epoch: int, index: int) -> None:
    """A sample was marked waiting for its tenant's budget (deferrals.py): its slot frees while it waits.

    Counted once per sample however often it is told; the caller then admits more. The batch's
    mark ends then: it let all but the batch's last sample in flight finish untold, and a sample
    leaving flight unfinished could make an untold finish the last (admission would count it in
    flight for good). Ended after the slot frees, so a mark set meanwhile goes too.
    """
    if admission_on(runtime):
        runtime.admission.leave_flight(batch_id, epoch=epoch, finished=None, sample=sample_key(epoch, index))
        _tell_quiet_finishes(runtime, batch_id)


def sample_released(runtime: WorkerRuntime, batch_id: str, epoch: int, index: int) -> None:
    """A waiting sample is sent on (deferrals.py): it holds a slot again (once, however often told)."""
    if admission_on(runtime):
        runtime.admission.reenter_flight(batch_id, sample=sample_key(epoch, index))


def tend_admission(dispatch: Dispatcher) -> int:
    """The reconciler's tick: heal admission from the batch records, then admit; return samples sent.

    For every batch admission knows: one no longer running is dropped (its slots free); a finish
    whose slot was never freed (its worker died between the batch's finish script and admission's)
    is counted from the batch's finished count; samples granted but never sent (their sender died)
    are sent. Then the free slots are granted.
    """
    runtime = dispatch.runtime
    if not admission_on(runtime):
        return 0
    sent = 0
    for batch_id in runtime.admission.batches():
        try:
            status = _running_status(runtime, batch_id)
            if status is None:
                continue
            finished = runtime.batches.finished_in_epoch(batch_id, status.epoch)
            runtime.admission.leave_flight(batch_id, epoch=status.epoch, finished=finished)
            sent += send_admitted(dispatch, batch_id)
        except _ADMIT_ERRORS as exc:
            logger.warning("admission: batch %s not tended (%s: %s)", batch_id, type(exc).__name__, exc)
    return sent + admit_more(dispatch)
