"""Batches in Redis: the ledger of what was sent, what progressed and what finished.

Every count is guarded by a per-sample marker written with HSETNX in the same
Lua script as the counters, so a task delivered twice is counted once, and a
connection lost mid-record leaves either both or neither. A batch stores all
its inputs before the first is sent, and counts each sample as sent, with a
progress time, before its message goes out: so the batch can start later
epochs after the producer has gone, finish sending what a crashed producer did
not send, and send again any sample whose message was lost. The keys live
without a TTL while the batch runs and get one when it finishes or is
cancelled (the layout is in :mod:`.keys`).

Each step run of a sample is counted too, once, with its time and its LLM usage
(:mod:`.step_stats`): a step with more to run after it as the next step starts (its message
carries the run), the last one with the sample's record. A new batch enters a capped index of
recent batches, so finished ones can be listed until their keys expire.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from enum import Enum
from typing import Any, NamedTuple, cast

import redis
from redis.commands.core import Script
from redis.exceptions import NoScriptError
from redis.typing import EncodableT, FieldT

from ..lua import read_lua
from .errors import BatchCancelledError, BatchInputMissingError, BatchNotFoundError, CorruptDataError
from .keys import DEFAULT_TENANT, batch_key, recent_batches_key, running_batches_key
from .locks import try_lock
from .replies import decode_json, decode_text
from .riding_writes import RidingWrites, is_cluster, ride_along, send_with_riders
from .step_stats import StepRun, StepStats, read_step_stats

__all__ = [
    "RECENT_BATCHES",
    "STEP_KWARG_TYPES",
    "BatchState",
    "BatchStatus",
    "BatchStore",
    "SampleFinish",
    "parse_sample_key",
    "sample_key",
    "wrong_step_kwargs",
]

# Marker, record, counters and last step of a finished sample in one atomic step (see the script);
# count_step.lua is the function both step scripts use to count a finished step run once.
_FINISH_SAMPLE_LUA = read_lua(__name__, "count_step.lua", "finish_sample.lua")
# A step's progress, written only if its batch exists and was not cancelled, with the run of the
# step before it counted once (count_step.lua; see the script).
_RECORD_PROGRESS_LUA = read_lua(__name__, "count_step.lua", "record_progress.lua")
# A finished step of a sample with more to run, counted once in its batch's steps (see the script).
_RECORD_STEP_LUA = read_lua(__name__, "count_step.lua", "record_step.lua")
# A failed sample made unfinished again, as its dead letter is sent back (see the script).
_REOPEN_SAMPLE_LUA = read_lua(__name__, "reopen_sample.lua")
# Admission's mark of the finishes it need not be told of, set and ended (see the scripts).
_QUIET_FINISHES_LUA = read_lua(__name__, "quiet_finishes.lua")
_END_QUIET_LUA = read_lua(__name__, "end_quiet.lua")

# How many batches the index of recent batches keeps (the newest by creation).
RECENT_BATCHES = 1000


class BatchState(str, Enum):
    """Where a batch is in its life, and once finished how it went.

    A finished batch is DONE (every sample done), DONE_WITH_FAILURES (some failed) or FAILED
    (every sample failed): a batch whose samples all failed must not read as done.
    """

    RUNNING = "running"
    DONE = "done"
    DONE_WITH_FAILURES = "done_with_failures"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def finished(self) -> bool:
        """True once every sample has an outcome, or the batch was cancelled: nothing more runs."""
        return self is not BatchState.RUNNING

    @property
    def failures(self) -> bool:
        """True for a finished batch some of whose samples failed (what ``status`` exits 1 for)."""
        return self in (BatchState.DONE_WITH_FAILURES, BatchState.FAILED)

    @property
    def label(self) -> str:
        """The state as a person reads it: ``done with failures``."""
        return self.value.replace("_", " ")


# What the scripts answer for a batch with no record, and (reopen) for a cancelled one.
_NO_BATCH = -2
_CANCELLED = -3

# Inputs stored (and read back to send) per round trip.
_CHUNK = 500


# The batch's keys besides its meta hash; all of them get the TTL when the batch finishes. The
# first eight in the order finish_sample.lua takes them.
_PARTS = (
    "outcomes",
    "records",
    "progress",
    "started",
    "reopened",
    "steps",
    "stepped",
    "waiting",
    "items",
    "redrives",
    "traces",
)


# What a step task message carries to name its recipe, sample and step, with the types it must have.
STEP_KWARG_TYPES: dict[str, type] = {
    "recipe": str,
    "skillbook": str,
    "batch_id": str,
    "epoch": int,
    "sample_index": int,
    "index": int,
}


def wrong_step_kwargs(kwargs: dict[str, Any]) -> list[str]:
    """The names of STEP_KWARG_TYPES that a message read back from Redis lacks or holds with another type.

    A bool is no int here, though Python says it is.
    """
    return [
        name
        for name, kind in STEP_KWARG_TYPES.items()
        if not isinstance(kwargs.get(name), kind) or isinstance(kwargs.get(name), bool)
    ]


def sample_key(epoch: int, index: int) -> str:
    """The id of one sample of one epoch inside its batch."""
    return f"e{epoch}:{index}"


def parse_sample_key(key: str) -> tuple[int, int]:
    """(epoch, index) of a sample key written by :func:`sample_key`."""
    epoch, _, index = key.removeprefix("e").partition(":")
    return int(epoch), int(index)


@dataclass
class BatchStatus:
    """A batch's progress: every sample of every epoch is in exactly one of six states.

    ``done``, ``failed`` (dead-lettered), ``running`` (its first step started), ``queued``
    (sent and not started, or not sent yet: later epochs, or what a producer is still sending),
    ``waiting_for_budget`` (a step was deferred because its tenant's budget is spent; it runs
    on when the budget has room) and ``cancelled`` (unfinished when the batch was cancelled)
    add up to ``total``.
    """

    batch_id: str
    skillbook: str
    recipe: str
    epochs: int
    per_epoch: int
    total: int
    enqueued: int
    done: int
    failed: int
    epoch: int
    skills_at_start: int
    elapsed_seconds: float
    sealed: bool = True
    started: int = 0
    progress_at: float = 0.0
    stored: int = 0
    cancelled: bool = False
    retried: int = 0
    created: float = 0.0
    tenant: str = DEFAULT_TENANT
    waiting: int = 0  # samples marked waiting for budget (the batch's waiting hash)

    @property
    def in_flight(self) -> int:
        """Samples enqueued and not yet finished (queued or running)."""
        return self.enqueued - self.done - self.failed

    @property
    def unfinished(self) -> int:
        """Samples of the batch with no outcome: running, queued, or cancelled."""
        return max(0, self.total - self.done - self.failed)

    @property
    def running(self) -> int:
        """Samples whose first step started and which have not finished (none once cancelled).

        A finished sample is marked started too, and one whose dead letter was sent back is
        running again.
        """
        if self.cancelled:
            return 0
        waiting = self.waiting_for_budget
        return min(self.unfinished - waiting, max(0, self.started - self.done - self.failed - waiting))

    @property
    def waiting_for_budget(self) -> int:
        """Samples whose step was deferred for their tenant's spent budget (none once cancelled)."""
        return 0 if self.cancelled else min(self.unfinished, self.waiting)

    @property
    def queued(self) -> int:
        """Samples not started yet: sent and waiting, or still to be sent (none once cancelled)."""
        return 0 if self.cancelled else self.unfinished - self.running - self.waiting_for_budget

    @property
    def cancelled_samples(self) -> int:
        """Samples of a cancelled batch that had not finished: none of them runs a step any more."""
        return self.unfinished if self.cancelled else 0

    def counts(self) -> dict[str, int]:
        """The six states' counts, which add up to ``total``, and how many retried samples finished."""
        return {
            "done": self.done,
            "failed": self.failed,
            "running": self.running,
            "queued": self.queued,
            "waiting_for_budget": self.waiting_for_budget,
            "cancelled": self.cancelled_samples,
            "retried": self.retried,
        }

    def to_dict(self) -> dict[str, Any]:
        """The batch's identity, state, counts, epoch and elapsed time, as ``status --json`` starts."""
        return {
            "batch_id": self.batch_id,
            "skillbook": self.skillbook,
            "tenant": self.tenant,
            "recipe": self.recipe,
            "state": self.state.value,
            "total": self.total,
            **self.counts(),
            "epoch": self.epoch,
            "epochs": self.epochs,
            "elapsed_seconds": round(self.elapsed_seconds, 3),
        }

    def summary(self) -> str:
        """'5 done (2 retried), 1 failed, 0 running, 4 queued of 10': every state, adding up to the total.

        Samples waiting for budget are named when there are some ('..., 3 waiting for budget of 10').
        """
        retried = f" ({self.retried} retried)" if self.retried else ""
        waiting = f", {self.waiting_for_budget} waiting for budget" if self.waiting_for_budget else ""
        cancelled = f", {self.cancelled_samples} cancelled" if self.cancelled else ""
        return (
            f"{self.done} done{retried}, {self.failed} failed, {self.running} running, "
            f"{self.queued} queued{waiting}{cancelled} of {self.total}"
        )

    @property
    def state(self) -> BatchState:
        """RUNNING until every sample of every epoch finished; then DONE, DONE_WITH_FAILURES (some
        failed) or FAILED (all did); or CANCELLED."""
        if self.cancelled:
            return BatchState.CANCELLED
        if not (self.sealed and self.done + self.failed >= self.total):
            return BatchState.RUNNING
        if not self.failed:
            return BatchState.DONE
        return BatchState.FAILED if not self.done else BatchState.DONE_WITH_FAILURES

    @property
    def fully_stored(self) -> bool:
        """True once the batch holds every input of its first epoch (sending may go on from them)."""
        return self.sealed and self.stored >= self.per_epoch


class SampleFinish(NamedTuple):
    """A sample's finish as its batch counted it (``BatchStore.record_done``/``record_failure``)."""

    finished: int
    """How many samples of its epoch finished, this one with them."""
    quiet: bool
    """Admission need not be told of it: within the mark admission left (``quiet_finishes``)."""


class BatchStore:
    """Reads and writes batch records in Redis."""

    def __init__(
        self,
        client: redis.Redis,
        *,
        prefix: str = "ace",
        ttl_seconds: int,
        riders: RidingWrites | None = None,
    ) -> None:
        """``ttl_seconds``: the lifetime of a batch's records (ACE_RESULT_TTL_SECONDS); ``riders``:
        writes sent with a step's scripts, in their round trip (a worker's metered spend)."""
        self.redis = client
        self.prefix = prefix
        self.ttl_seconds = ttl_seconds
        self.riders = riders
        self._cluster = is_cluster(client)  # its pipelines run no script: nothing rides with one
        self._finish_script = client.register_script(_FINISH_SAMPLE_LUA)
        self._progress_script = client.register_script(_RECORD_PROGRESS_LUA)
        self._step_script = client.register_script(_RECORD_STEP_LUA)
        self._reopen_script = client.register_script(_REOPEN_SAMPLE_LUA)
        self._quiet_script = client.register_script(_QUIET_FINISHES_LUA)
        self._end_quiet_script = client.register_script(_END_QUIET_LUA)

    def _key(self, batch_id: str, part: str = "") -> str:
        return batch_key(self.prefix, batch_id, part)

    def _run_script(self, script: Script, keys: list[str], args: list[EncodableT]) -> Any:
        """Run a step's script, with the riders' pending writes in the same round trip if they have any."""
        if self.riders is not None and not self._cluster:
            # EVALSHA itself, not the Script: a pipeline holding a Script first checks it exists.
            rode, answer = ride_along(
                self.redis, self.riders, lambda pipe: pipe.evalsha(script.sha, len(keys), *keys, *args)
            )
            if rode and not isinstance(answer, NoScriptError):  # else: a server that has not seen it yet
                if isinstance(answer, Exception):
                    raise answer
                return answer
        return script(keys=keys, args=args)

    def create(
        self,
        batch_id: str,
        *,
        skillbook: str,
        recipe: str,
        per_epoch: int,
        epochs: int,
        skills_at_start: int,
        tenant: str = DEFAULT_TENANT,
    ) -> None:
        """Record a new batch, with no TTL while it runs, in the set of running batches and the recent index.

        ``tenant`` is the tenant that owned the skillbook when the batch was made: what its samples
        are counted, limited and scheduled as. One round trip; not one transaction: the running set
        and the index live in slots of their own.
        """
        now = time.time()
        meta: dict[FieldT, EncodableT] = {
            "skillbook": skillbook,
            "tenant": tenant,
            "recipe": recipe,
            "per_epoch": per_epoch,
            "epochs": epochs,
            "total": per_epoch * epochs,
            "enqueued": 0,
            "done": 0,
            "failed": 0,
            "epoch": 1,
            "skills_at_start": skills_at_start,
            # An input of unknown length is sealed once the producer has sent all of it.
            "sealed": int(per_epoch > 0),
            "created": now,
            "progress_at": now,
        }
        recent = recent_batches_key(self.prefix)
        pipe = self.redis.pipeline(transaction=False)
        pipe.hset(self._key(batch_id), mapping=meta)
        pipe.sadd(running_batches_key(self.prefix), batch_id)
        pipe.zadd(recent, {batch_id: now})
        pipe.zremrangebyrank(recent, 0, -RECENT_BATCHES - 1)  # the oldest beyond the cap
        pipe.execute()

    def seal(self, batch_id: str, per_epoch: int) -> None:
        """Fix the size of a batch whose input length was not known (or not met) until it was stored."""
        epochs = int(self.redis.hget(self._key(batch_id), "epochs") or 1)
        self._resize(batch_id, per_epoch=per_epoch, epochs=epochs, seal=True)

    def end_at_epoch(self, batch_id: str, epoch: int) -> None:
        """Start no epoch after ``epoch``: the batch ends once that epoch's samples have finished."""
        per_epoch = int(self.redis.hget(self._key(batch_id), "per_epoch") or 0)
        self._resize(batch_id, per_epoch=per_epoch, epochs=epoch)

    def _resize(self, batch_id: str, *, per_epoch: int, epochs: int, seal: bool = False) -> None:
        """Set the batch's size; one whose every sample finished already is finished now (and expires)."""
        size: dict[FieldT, EncodableT] = {
            "per_epoch": per_epoch,
            "epochs": epochs,
            "total": per_epoch * epochs,
        }
        self.redis.hset(self._key(batch_id), mapping={**size, **({"sealed": 1} if seal else {})})
        state = self.status(batch_id).state
        if state.finished and state is not BatchState.CANCELLED:  # no last sample is left to finish it
            self.redis.hsetnx(self._key(batch_id), "finished_at", time.time())
            self._expire(batch_id)

    def unfinished_in_epoch(self, batch_id: str, epoch: int) -> list[int]:
        """The indexes (from 1) of the samples of ``epoch`` with no outcome yet, sent or not."""
        per_epoch = int(self.redis.hget(self._key(batch_id), "per_epoch") or 0)
        unfinished = []
        for start in range(1, per_epoch + 1, _CHUNK):
            indexes = range(start, min(start + _CHUNK, per_epoch + 1))
            outcomes = self.redis.hmget(
                self._key(batch_id, "outcomes"), [sample_key(epoch, i) for i in indexes]
            )
            unfinished += [i for i, outcome in zip(indexes, outcomes, strict=True) if outcome is None]
        return unfinished

    def _expire(self, batch_id: str) -> None:
        pipe = self.redis.pipeline(transaction=False)
        for key in (self._key(batch_id), *(self._key(batch_id, part) for part in _PARTS)):
            pipe.expire(key, self.ttl_seconds)
        pipe.execute()

    def exists(self, batch_id: str) -> bool:
        """True if the batch is known (and not expired)."""
        # Its record, not just its hash: a counter bumped after the record expired leaves a bare hash.
        return bool(self.redis.hexists(self._key(batch_id), "skillbook"))

    def store_items(self, batch_id: str, payloads: Iterable[dict[str, Any]]) -> int:
        """Append the first epoch's inputs, a chunk per round trip; return how many were stored.

        Should ``payloads`` raise, what it yielded before is stored, then the error goes on.
        """
        key, stored, chunk = self._key(batch_id, "items"), 0, []
        try:
            for payload in payloads:
                chunk.append(json.dumps(payload))
                if len(chunk) == _CHUNK:
                    stored += self._push(key, chunk)
        finally:
            if chunk:
                stored += self._push(key, chunk)
        return stored

    def _push(self, key: str, chunk: list[str]) -> int:
        self.redis.rpush(key, *chunk)
        count = len(chunk)
        chunk.clear()
        return count

    def replace_items(self, batch_id: str, payloads: Iterable[dict[str, Any]]) -> int:
        """Store the first epoch's inputs anew (a resumed batch whose producer died while storing)."""
        self.redis.delete(self._key(batch_id, "items"))
        return self.store_items(batch_id, payloads)

    def items(self, batch_id: str) -> list[dict[str, Any]]:
        """The batch's stored inputs (epoch 1's payloads, in sample order)."""
        return [json.loads(raw) for raw in self.redis.lrange(self._key(batch_id, "items"), 0, -1)]

    def iter_items(
        self, batch_id: str, *, first: int = 1, last: int | None = None
    ) -> Iterator[dict[str, Any]]:
        """The stored inputs of samples ``first`` to ``last`` (from 1; None: to the end), read a chunk
        per round trip: constant memory for any batch."""
        key, start = self._key(batch_id, "items"), max(0, first - 1)
        while last is None or start < last:
            stop = start + _CHUNK if last is None else min(start + _CHUNK, last)
            chunk = self.redis.lrange(key, start, stop - 1)
            if not chunk:
                return
            yield from (json.loads(raw) for raw in chunk)
            start += len(chunk)

    def item(self, batch_id: str, index: int) -> dict[str, Any]:
        """The input payload of sample ``index`` (from 1); BatchInputMissingError if it was never stored."""
        raw = self.redis.lindex(self._key(batch_id, "items"), index - 1)
        if raw is None:
            raise BatchInputMissingError(batch_id, index)
        loaded: dict[str, Any] = json.loads(raw)
        return loaded

    def record_sent(
        self, batch_id: str, epoch: int, index: int, *, trace_context: dict[str, str] | None = None
    ) -> None:
        """Count a sample as sent, before its message goes out.

        Counted first, so a crash between this and the send leaves a sample the
        reconciler sends again, never one that was sent and is unknown here.
        ``trace_context`` (the sample's W3C carrier, when tracing is on) is kept
        for the reconciler's re-sends, in the same round trip.
        """
        now = time.time()
        pipe = self.redis.pipeline()
        pipe.hincrby(self._key(batch_id), "enqueued", 1)
        pipe.hset(self._key(batch_id), mapping={"epoch": epoch, "progress_at": now})
        pipe.zadd(self._key(batch_id, "progress"), {sample_key(epoch, index): now})
        if trace_context:
            pipe.hset(self._key(batch_id, "traces"), sample_key(epoch, index), json.dumps(trace_context))
        pipe.execute()

    def trace_context(self, batch_id: str, epoch: int, index: int) -> dict[str, str] | None:
        """The trace context a sample was sent with (see record_sent), or None."""
        raw = self.redis.hget(self._key(batch_id, "traces"), sample_key(epoch, index))
        if raw is None:
            return None
        loaded = json.loads(raw)
        return loaded if isinstance(loaded, dict) else None

    def cancel(self, batch_id: str) -> None:
        """Stop a batch: its steps not yet run are skipped, its records expire, nothing is re-sent.

        A step running now finishes, and a sample whose last step it is is counted done (or
        failed); every other unfinished sample is counted cancelled, dead-lettered never.
        """
        self.status(batch_id)  # LookupError for an unknown batch
        self.redis.hset(self._key(batch_id), mapping={"cancelled": 1, "finished_at": time.time()})
        self._expire(batch_id)
        self.forget_running(batch_id)

    def record_progress(
        self, batch_id: str, epoch: int, index: int, *, first_step: bool, previous: StepRun | None = None
    ) -> bool:
        """Note that a step of a sample started (for its first step, that the sample started).

        ``previous``: the run of the sample's step before this one (its message carries it),
        counted in the batch's steps in the same round trip, once, as :meth:`record_step` counts.
        Returns False if the batch was cancelled (the step should not run), in the same round trip.

        Raises:
            BatchNotFoundError: the batch has no record (never created, or expired); nothing was written.
        """
        keys, args = self._progress_call(batch_id, epoch, index, first_step, previous)
        return self._progress_answer(batch_id, self._run_script(self._progress_script, keys, args))

    def record_progress_and_read(
        self,
        batch_id: str,
        epoch: int,
        index: int,
        *,
        first_step: bool,
        previous: StepRun | None = None,
        reads: Callable[[Any], object] | None,
    ) -> tuple[bool, list[Any] | None]:
        """:meth:`record_progress`, with the reads ``reads`` queues on a pipeline sent in the same round
        trip, in one transaction (so they agree with each other); returns its answer and their replies.

        None for reads, or on Redis Cluster, whose transactions keep to one slot: no reads (None).
        """
        if reads is None or self._cluster:
            return self.record_progress(
                batch_id, epoch, index, first_step=first_step, previous=previous
            ), None
        keys, args = self._progress_call(batch_id, epoch, index, first_step, previous)

        def commands(pipe: Any) -> None:
            # EVALSHA itself, not the Script: a pipeline holding a Script first checks it exists.
            pipe.evalsha(self._progress_script.sha, len(keys), *keys, *args)
            reads(pipe)

        answer, *replies = send_with_riders(self.redis, self.riders, commands)
        if isinstance(answer, NoScriptError):  # a server that has not seen it yet (or was restarted)
            answer = self._progress_script(keys=keys, args=args)
        elif isinstance(answer, Exception):
            raise answer
        return self._progress_answer(batch_id, answer), replies

    def _progress_call(
        self, batch_id: str, epoch: int, index: int, first_step: bool, previous: StepRun | None
    ) -> tuple[list[str], list[EncodableT]]:
        """The keys and arguments of record_progress.lua for one step's start."""
        keys = [
            self._key(batch_id),
            *(self._key(batch_id, part) for part in ("progress", "started", "waiting", "steps", "stepped")),
        ]
        args: list[EncodableT] = [sample_key(epoch, index), time.time(), int(first_step)]
        if previous is not None:
            args += previous.args()
        return keys, args

    def _progress_answer(self, batch_id: str, reply: Any) -> bool:
        """What record_progress.lua answered: True to run the step; BatchNotFoundError for no batch."""
        answer = int(reply)
        if answer == _NO_BATCH:
            raise BatchNotFoundError(batch_id, self.ttl_seconds)
        return answer == 1

    def stalled(self, batch_id: str, before: float) -> list[tuple[int, int]]:
        """(epoch, index) of every unfinished sample whose last progress was before ``before``."""
        keys = self.redis.zrangebyscore(self._key(batch_id, "progress"), "-inf", before)
        return [parse_sample_key(decode_text(cast(bytes, key))) for key in keys]

    def record_redrive(self, batch_id: str, epoch: int, index: int) -> int:
        """Count one more re-send of a sample and restart its progress clock; return its re-sends."""
        key, now = sample_key(epoch, index), time.time()
        pipe = self.redis.pipeline()
        pipe.hincrby(self._key(batch_id, "redrives"), key, 1)
        pipe.zadd(self._key(batch_id, "progress"), {key: now}, xx=True)
        pipe.hset(self._key(batch_id), "progress_at", now)
        count, _, _ = pipe.execute()
        return int(count)

    def redrives(self, batch_id: str) -> dict[str, int]:
        """How often each re-sent sample was sent again, by sample key."""
        raw = self.redis.hgetall(self._key(batch_id, "redrives"))
        return {decode_text(k): int(v) for k, v in raw.items()}

    def running(self) -> list[str]:
        """Ids of the batches not known to have finished (some may have expired since)."""
        return sorted(decode_text(raw) for raw in self.redis.smembers(running_batches_key(self.prefix)))

    def recent(self, limit: int) -> list[tuple[str, float]]:
        """The ``limit`` newest batches (id, creation time), newest first, finished ones too.

        An id whose batch has expired is dropped from the index as it is met.
        """
        key = recent_batches_key(self.prefix)
        found: list[tuple[str, float]] = []
        start = 0
        while len(found) < limit:
            page = cast(
                list[tuple[bytes, float]],
                self.redis.zrevrange(key, start, start + limit - 1, withscores=True),
            )
            if not page:
                break
            start += len(page)
            ids = [decode_text(member) for member, _ in page]
            pipe = self.redis.pipeline(transaction=False)
            for batch_id in ids:
                pipe.hexists(self._key(batch_id), "skillbook")
            alive = pipe.execute()
            gone = [batch_id for batch_id, exists in zip(ids, alive, strict=True) if not exists]
            if gone:
                self.redis.zrem(key, *gone)
            found += [
                (batch_id, float(score))
                for batch_id, (_, score), exists in zip(ids, page, alive, strict=True)
                if exists
            ]
        return found[:limit]

    def oldest_progress(self, batch_id: str) -> float | None:
        """When the unfinished sample that has waited longest last made progress; None if none waits."""
        oldest = cast(
            list[tuple[bytes, float]],
            self.redis.zrange(self._key(batch_id, "progress"), 0, 0, withscores=True),
        )
        return float(oldest[0][1]) if oldest else None

    def record_step(self, batch_id: str, epoch: int, index: int, run: StepRun) -> bool:
        """Count a finished step run of a sample that has more steps to run (the last one is counted
        by record_done); False if it was not counted: counted already, or the batch is cancelled,
        finished or unknown (a step's figures are no reason to fail it).
        """
        keys = [self._key(batch_id), self._key(batch_id, "steps"), self._key(batch_id, "stepped")]
        return int(self._run_script(self._step_script, keys, [sample_key(epoch, index), *run.args()])) == 1

    def step_stats(self, batch_id: str) -> list[StepStats]:
        """Each step's figures so far (samples done and failed, seconds, tokens, cost), in step order."""
        return read_step_stats(self.redis.hgetall(self._key(batch_id, "steps")))

    def forget_running(self, batch_id: str) -> None:
        """Take a finished (or vanished) batch off the running set."""
        self.redis.srem(running_batches_key(self.prefix), batch_id)

    def reopen(self, batch_id: str, epoch: int, index: int) -> bool:
        """Make a failed sample unfinished again, before its dead letter is sent back.

        Returns False if the sample is not failed (done, or reopened already): its letter
        need not be sent again.

        Raises:
            BatchNotFoundError: the batch has no record (it expired).
            BatchCancelledError: the batch was cancelled; nothing of it runs again.
        """
        first = ("outcomes", "progress", "reopened", "records", "steps")  # in the order the script takes them
        keys = [
            self._key(batch_id),
            *(self._key(batch_id, part) for part in first),
            *(self._key(batch_id, part) for part in _PARTS if part not in first),
        ]
        answer = int(self._reopen_script(keys=keys, args=[sample_key(epoch, index), time.time()]))
        if answer == _NO_BATCH:
            raise BatchNotFoundError(batch_id, self.ttl_seconds)
        if answer == _CANCELLED:
            raise BatchCancelledError(batch_id)
        if answer == 1:
            self.redis.sadd(running_batches_key(self.prefix), batch_id)  # the reconciler watches it again
        return answer == 1

    def outcome(self, batch_id: str, epoch: int, index: int) -> str | None:
        """How a sample finished, ``done`` or ``failed``, or None while it has not (or runs again)."""
        raw = self.redis.hget(self._key(batch_id, "outcomes"), sample_key(epoch, index))
        return None if raw is None else (raw.decode() if isinstance(raw, bytes) else str(raw))

    def record_done(
        self, batch_id: str, epoch: int, index: int, payload: dict[str, Any], *, step: StepRun | None = None
    ) -> SampleFinish | None:
        """Record a finished sample; return how many of its epoch finished (and whether admission
        need be told), None if already recorded.

        ``step``: the run of its last step, counted in the batch's steps in the same round trip.

        Raises:
            BatchNotFoundError: the batch has no record (it expired); nothing was written.
        """
        step_args: list[EncodableT] = step.args() if step is not None else ["", ""]
        return self._finish(batch_id, epoch, index, "done", {"payload": payload}, step_args)

    def record_failure(
        self,
        batch_id: str,
        epoch: int,
        index: int,
        *,
        step: str,
        error: str,
        traceback: str = "",
        sample: Any = None,
        step_index: int | None = None,
    ) -> SampleFinish | None:
        """Record a failed sample with the step, the error, a traceback summary and its input sample.

        ``step_index``: the index of the step that failed, whose failed count the sample joins (None
        for a failure no step of the recipe names, such as the reconciler giving up on a sample).

        Raises:
            BatchNotFoundError: the batch has no record (never created, or expired); nothing was written.
        """
        record = {
            "step": step,
            "error": error,
            "traceback": traceback,
            "epoch": epoch,
            "index": index,
            "sample": sample,
        }
        if step_index is None:
            return self._finish(batch_id, epoch, index, "failed", record, ["", ""])
        record["step_index"] = step_index  # reopen_sample.lua reads it to count the retry
        return self._finish(batch_id, epoch, index, "failed", record, [step_index, step])

    def _finish(
        self,
        batch_id: str,
        epoch: int,
        index: int,
        outcome: str,
        record: dict[str, Any],
        step_args: list[EncodableT],
    ) -> SampleFinish | None:
        keys = [self._key(batch_id), *(self._key(batch_id, part) for part in _PARTS)]
        args: list[EncodableT] = [
            sample_key(epoch, index),
            outcome,
            json.dumps({"outcome": outcome, **record}),
            epoch,
            self.ttl_seconds,
            time.time(),
            *step_args,
        ]
        finished, quiet = (int(part) for part in self._run_script(self._finish_script, keys, args))
        if finished == _NO_BATCH:
            raise BatchNotFoundError(batch_id, self.ttl_seconds)
        # None: a redelivered final task, counted already.
        return None if finished < 0 else SampleFinish(finished, quiet == 1)

    def quiet_finishes(self, batch_id: str, until: int) -> None:
        """Let the batch's finishes up to ``until`` (its finished count over all epochs) go untold
        to admission: :meth:`record_done` answers them quiet (admission's mark; see
        tenancy/leave_and_admit.lua). A batch with no record is left alone."""
        keys = [self._key(batch_id)]
        self._run_script(self._quiet_script, keys, [until])

    def end_quiet(self, batch_id: str) -> tuple[int, int] | None:
        """End the batch's quiet finishes; (its epoch, that epoch's finished count) if there was a mark.

        Every finish from now on is told; the caller tells admission the count the quiet ones reached.
        """
        key = self._key(batch_id)
        answer = self._end_quiet_script(keys=[key], args=[])
        if not answer:
            return None
        epoch, finished = (decode_text(part) for part in answer)
        counter = f"finished:e{epoch}"
        fields = _NumberFields(key, {"epoch": epoch, counter: finished})
        return fields.int_field("epoch"), fields.int_field(counter)

    def finished_in_epoch(self, batch_id: str, epoch: int) -> int:
        """How many samples of ``epoch`` finished, one way or the other."""
        return int(self.redis.hget(self._key(batch_id), f"finished:e{epoch}") or 0)

    def epoch_start_lock(self, batch_id: str, epoch: int, seconds: int) -> AbstractContextManager[bool]:
        """Hold the right to send ``epoch``'s samples; yields False if another task holds it.

        It expires after ``seconds``, so a worker killed while sending leaves the rest to
        the redelivery of its task rather than to nobody.
        """
        return try_lock(self.redis, self._key(batch_id, f"starting:e{epoch}"), seconds)

    def statuses(self, batch_ids: Iterable[str]) -> Iterator[BatchStatus]:
        """The status of each of ``batch_ids`` still kept, in their order, each id once; a batch
        whose record expired since it was listed (a running set, the recent index) is left out."""
        for batch_id in dict.fromkeys(batch_ids):
            try:
                yield self.status(batch_id)
            except BatchNotFoundError:
                continue

    def status(self, batch_id: str) -> BatchStatus:
        """The batch's counters; BatchNotFoundError (a LookupError) if it is unknown.

        CorruptDataError names the key and field of a counter that is missing or not a number.
        """
        pipe = self.redis.pipeline(transaction=True)
        pipe.hgetall(self._key(batch_id))
        pipe.hlen(self._key(batch_id, "started"))
        pipe.llen(self._key(batch_id, "items"))
        pipe.hlen(self._key(batch_id, "waiting"))
        meta, started, stored, waiting = pipe.execute()
        text = {decode_text(k): decode_text(v) for k, v in meta.items()}
        # A counter bumped by a late task after the record expired leaves a hash without its fields.
        if "skillbook" not in text:
            raise BatchNotFoundError(batch_id, self.ttl_seconds)
        fields = _NumberFields(self._key(batch_id), text)
        created = fields.float_field("created")
        return BatchStatus(
            batch_id=batch_id,
            skillbook=text["skillbook"],
            recipe=fields.text_field("recipe"),
            tenant=text.get("tenant") or DEFAULT_TENANT,
            epochs=fields.int_field("epochs"),
            per_epoch=fields.int_field("per_epoch"),
            total=fields.int_field("total"),
            enqueued=fields.int_field("enqueued"),
            done=fields.int_field("done"),
            failed=fields.int_field("failed"),
            epoch=fields.int_field("epoch"),
            skills_at_start=fields.int_field("skills_at_start"),
            # A finished batch's clock stops at its last sample.
            elapsed_seconds=fields.float_field("finished_at", time.time()) - created,
            sealed=text.get("sealed", "1") == "1",
            started=int(started),
            progress_at=fields.float_field("progress_at", created),
            stored=int(stored),
            cancelled=text.get("cancelled") == "1",
            retried=fields.int_field("retried", 0),
            created=created,
            waiting=int(waiting),
        )

    def records(self, batch_id: str) -> dict[str, dict[str, Any]]:
        """Every finished sample's record, by sample key: outcome plus payload or error."""
        key = self._key(batch_id, "records")
        raw = self.redis.hgetall(key)
        return {decode_text(k): decode_json(v, key, decode_text(k)) for k, v in raw.items()}

    def errors(self, batch_id: str) -> list[dict[str, Any]]:
        """The failure records of the batch, in epoch and sample order."""
        failed = [r for r in self.records(batch_id).values() if r["outcome"] == "failed"]
        return sorted(failed, key=lambda r: (r["epoch"], r["index"]))


class _NumberFields:
    """A batch hash's fields, read so that a missing or garbled one is a CorruptDataError naming it."""

    def __init__(self, key: str, text: dict[str, str]) -> None:
        self.key = key
        self._text = text

    def text_field(self, name: str) -> str:
        if name not in self._text:
            raise CorruptDataError(self.key, f"has no field {name!r}")
        return self._text[name]

    def int_field(self, name: str, default: int | None = None) -> int:
        return int(self._number(name, int, default))

    def float_field(self, name: str, default: float | None = None) -> float:
        return float(self._number(name, float, default))

    def _number(self, name: str, kind: type[int] | type[float], default: float | None) -> float:
        raw = self._text.get(name) or None  # an empty field counts as missing, as it always did
        if raw is None:
            if default is None:
                raise CorruptDataError(self.key, f"has no field {name!r}")
            return default
        try:
            return kind(raw)
        except ValueError:
            shown = raw if len(raw) <= 40 else f"{raw[:40]}..."
            raise CorruptDataError(self.key, f"field {name!r} holds {shown!r}, not a number") from None
