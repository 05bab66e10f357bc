"""Nightly batch learning: traces wait in a per-skillbook inbox, one run a night learns from them.

A run takes the inbox entries after the skillbook's cursor, learns from them
with TraceAnalyser's chain through the workers (``nightly_epochs`` epochs),
deduplicates, records a checkpoint (the version to roll back to, plus a JSON
and a markdown file when ``nightly_dir`` is set) and stores a report.

Only one run per skillbook at a time: a Redis lock, renewed while the run is
alive, so two beat instances or a manual ``ace-workers nightly run`` at the
same moment start one run between them. Only one run per night: the night a
run finished is recorded, and the scheduled runs of that night skip. A run
that crashed resumes: its batch id and the inbox range it took are recorded
before anything is sent, so the next attempt sends only what the crash left
unsent and waits for that batch, and the cursor moves only when the run
completes. A batch that stops making progress ends the wait with
NightlyStalled (the next run resumes it), so no run waits forever. A batch
that stalls in ``nightly_max_stalls`` runs in a row, or that an operator
cancelled, is abandoned: the run dead-letters its unfinished samples
(``dead-letters retry`` sends them again), finishes, and says so in its report.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import redis
from redis.lock import Lock

from ...core.context import ACEStepContext
from ...core.files import write_text_atomically
from ...redaction.context_redaction import redact_context
from ..producer.producer import BatchHandle, Producer
from ..settings import DEDUP_OFF, WorkerSettings
from ..store.batches import BatchState, BatchStatus
from ..store.keys import (
    INBOX_TRACE_FIELD,
    NIGHTLY_CURSOR,
    NIGHTLY_LAST_NIGHT,
    NIGHTLY_RUN_FIELDS,
    NIGHTLY_STALLS,
    SkillbookKeys,
)
from ..store.replies import decode_text
from ..store.write_scope import dedup_write_scope, write_scope
from ..worker.dispatch import Dispatcher
from ..worker.payload import context_to_payload
from ..worker.reconcile import abandon_batch, lost_after_seconds, reconcile_batch
from ..worker.runtime import WorkerRuntime
from ..worker.task_names import NIGHTLY_TASK, RETENTION_TASK
from .errors import NightlyBusy, NightlyInboxChanged, NightlyStalled
from .schedule import NightlySchedule, parse_schedule

__all__ = [
    "NIGHTLY_TASK",
    "NightlyReport",
    "NightlyRunner",
    "beat_schedule",
    "night_of",
    "retention_schedule",
    "run_nightly",
    "stall_seconds",
]

logger = logging.getLogger(__name__)

REPORTS_KEPT = 30
POLL_SECONDS = 0.2

# The dedup hook: skillbook name -> counts such as {"merged": 2, "removed": 1}.
Deduplicate = Callable[[str], dict[str, int]]


def stall_seconds(settings: WorkerSettings) -> float:
    """How long a nightly batch may go without progress before its run gives up.

    The reconciler sends a lost sample again after ``reconcile.lost_after_seconds`` (a
    re-send counts as progress); one visibility timeout more without any is a
    batch the ledger cannot move.
    """
    return lost_after_seconds(settings) + settings.visibility_timeout_seconds


@dataclass
class NightlyReport:
    """What one nightly run did."""

    skillbook: str
    night: str
    run_id: str
    started_at: str
    finished_at: str = ""
    traces: int = 0
    epochs: int = 1
    done: int = 0
    failed: int = 0
    cancelled: int = 0  # samples of a cancelled batch that never finished
    batch_id: str = ""
    resumed: bool = False
    skills_before: int = 0
    skills_after_learning: int = 0
    skills_after: int = 0
    dedup: dict[str, int] = field(default_factory=dict)
    checkpoint_version: int = 0
    files: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    abandoned: str = ""  # why the run gave up on its batch; its unfinished samples are dead letters
    durations: dict[str, float] = field(default_factory=dict)

    @property
    def skills_added(self) -> int:
        """Net growth of the skillbook while learning, before deduplication."""
        return self.skills_after_learning - self.skills_before

    @property
    def skills_merged(self) -> int:
        """Skills deduplication merged into others."""
        return self.dedup.get("merged", 0)

    @property
    def skills_removed(self) -> int:
        """Skills deduplication removed."""
        return self.dedup.get("removed", 0)

    def to_dict(self) -> dict[str, Any]:
        """The report as stored in Redis (JSON)."""
        counts = {"added": self.skills_added, "merged": self.skills_merged, "removed": self.skills_removed}
        return {**asdict(self), **{f"skills_{name}": count for name, count in counts.items()}}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> NightlyReport:
        """A report read back from Redis."""
        names = set(cls.__dataclass_fields__)
        return cls(**{key: value for key, value in data.items() if key in names})


def dedup_from_settings(runtime: WorkerRuntime) -> Deduplicate | None:
    """The dedup hook the settings ask for: consolidate through the store, or None when off."""
    if runtime.settings.dedup_provider == DEDUP_OFF:
        return None

    def deduplicate(skillbook: str) -> dict[str, int]:
        # Planned again if a worker removes or rewrites a named skill before it applies.
        with write_scope(dedup_write_scope({"nightly": skillbook})):
            report = runtime.deduplicator(skillbook).deduplicate(runtime.skillbook(skillbook))
        merged = sum(len(ids) for ids in report.merged.values())
        return {
            "merged": merged,
            # Not report.removed: that counts the merged-away skills again.
            "removed": len(report.deleted),
            "kept": len(report.kept),
            "updated": len(report.updated),
        }

    return deduplicate


def night_of(moment: datetime | None = None) -> str:
    """The night a run at ``moment`` (default now) belongs to: its UTC date."""
    return (moment or datetime.now(UTC)).astimezone(UTC).date().isoformat()


class NightlyRunner:
    """Runs the nightly job of one skillbook at a time through a producer and its workers."""

    def __init__(
        self,
        producer: Producer,
        *,
        deduplicate: Deduplicate | None = None,
        batch_timeout: float | None = None,
        stall_after: float | None = None,
    ) -> None:
        self.producer = producer
        self.runtime = producer.runtime
        self.settings = producer.runtime.settings
        self.redis: redis.Redis = producer.runtime.redis
        # With ACE_DEDUP_PROVIDER on, the night ends with a consolidation of its skillbook.
        self.deduplicate = deduplicate if deduplicate is not None else dedup_from_settings(self.runtime)
        self.batch_timeout = batch_timeout
        self.stall_seconds = stall_seconds(self.settings) if stall_after is None else stall_after

    def keys(self, skillbook: str) -> SkillbookKeys:
        """The Redis keys of ``skillbook``."""
        return SkillbookKeys(skillbook, self.settings.queue_prefix)

    def run(
        self, skillbook: str, *, night: str | None = None, scheduled: bool = True
    ) -> NightlyReport | None:
        """Run the nightly job of ``skillbook`` now; None if skipped.

        A scheduled run skips a night that already has a finished run; a
        manual one (``scheduled=False``) runs anyway. Both raise NightlyBusy
        while another run of the skillbook holds the lock.
        """
        keys = self.keys(skillbook)
        night = night or night_of()
        lock = self.redis.lock(
            keys.nightly_lock, timeout=self.settings.nightly_lock_seconds, blocking=False, thread_local=False
        )
        if not lock.acquire():
            raise NightlyBusy(skillbook)
        try:
            state = self._state(keys)
            if scheduled and state.get(NIGHTLY_LAST_NIGHT) == night and not state.get("run_id"):
                logger.info("nightly %s: night %s already has its run; skipped", skillbook, night)
                return None
            return self._run_locked(skillbook, keys, night, state, lock)
        finally:
            try:
                lock.release()
            except redis.exceptions.LockError:
                logger.warning("nightly %s: the lock expired before the run released it", skillbook)

    def reports(self, skillbook: str, limit: int = 10) -> list[NightlyReport]:
        """The newest reports of ``skillbook``, newest first."""
        raw = self.redis.lrange(self.keys(skillbook).nightly_reports, 0, limit - 1)
        return [NightlyReport.from_dict(json.loads(item)) for item in raw]

    def pending(self, skillbook: str) -> int:
        """Inbox traces the next run would take (after the cursor)."""
        keys = self.keys(skillbook)
        return len(self._inbox_after(keys, self._state(keys).get(NIGHTLY_CURSOR) or "0-0"))

    # -- one run -----------------------------------------------------------------------
    def _run_locked(
        self, skillbook: str, keys: SkillbookKeys, night: str, state: dict[str, str], lock: Lock
    ) -> NightlyReport:
        resumed = bool(state.get("run_id"))
        if resumed:
            logger.warning("nightly %s: resuming run %s after a crash", skillbook, state["run_id"])
        else:
            state = self._plan_run(skillbook, keys)
        report = NightlyReport(
            skillbook=skillbook,
            night=night,
            run_id=state["run_id"],
            started_at=state["started_at"],
            resumed=resumed,
            traces=int(state["traces"]),
            batch_id=state.get("batch_id", ""),
            skills_before=int(state["skills_before"]),
        )
        started = time.monotonic()
        if report.traces:
            status, report.abandoned = self._learn(skillbook, keys, state, lock)
            report.done, report.failed, report.epochs = status.done, status.failed, status.epochs
            report.cancelled = status.cancelled_samples
            report.errors = [
                f"{e['step']}: {e['error']}" for e in self.producer.runtime.batches.errors(report.batch_id)
            ][:20]
        report.durations["learn"] = round(time.monotonic() - started, 3)
        report.skills_after_learning = len(self.runtime.skillbook(skillbook))
        lock.extend(self.settings.nightly_lock_seconds, replace_ttl=True)
        self._finish(skillbook, keys, night, state, report)
        return report

    def _plan_run(self, skillbook: str, keys: SkillbookKeys) -> dict[str, str]:
        """Record the run (its inbox range and batch id) before anything is sent."""
        cursor = self._state(keys).get(NIGHTLY_CURSOR) or "0-0"
        entries = self._inbox_after(keys, cursor, count=self.settings.nightly_max_traces)
        state = {
            "run_id": uuid.uuid4().hex,
            "started_at": datetime.now(UTC).isoformat(),
            "range_end": entries[-1][0] if entries else cursor,
            "traces": str(len(entries)),
            "batch_id": uuid.uuid4().hex if entries else "",
            "skills_before": str(len(self.runtime.skillbook(skillbook))),
        }
        self.redis.hset(keys.nightly, mapping=state)  # type: ignore[arg-type]
        return state

    def _learn(
        self, skillbook: str, keys: SkillbookKeys, state: dict[str, str], lock: Lock
    ) -> tuple[BatchStatus, str]:
        """Send the run's batch (or what a crash left unsent) and wait; (its status, why abandoned or "")."""
        batch_id = state["batch_id"]
        if not self.runtime.batches.exists(batch_id):
            traces = self._traces(keys, state)
            self.producer.enqueue_traces(
                traces, skillbook, epochs=self.settings.nightly_epochs, batch_id=batch_id
            )
        else:
            self._send_rest_of_first_epoch(keys, state)
        return self._wait(skillbook, keys, batch_id, lock)

    def _traces(self, keys: SkillbookKeys, state: dict[str, str]) -> list[Any]:
        """The traces of the run: the inbox range it recorded, after the cursor."""
        cursor = self._state(keys).get(NIGHTLY_CURSOR) or "0-0"
        return [json.loads(line) for _, line in self._inbox_after(keys, cursor, until=state["range_end"])]

    def _send_rest_of_first_epoch(self, keys: SkillbookKeys, state: dict[str, str]) -> None:
        """Send the samples of epoch 1 a crashed run created its batch for but never sent.

        Through ``Producer.resume``, as any sender that died mid-send is resumed: from the
        batch's ``enqueued`` count on, from its stored inputs. A run that died while
        storing them stores them again first, from the inbox range it recorded.
        """
        batch_id = state["batch_id"]
        batches = self.runtime.batches
        status = batches.status(batch_id)
        if not status.fully_stored:
            # An inbox entry older than redaction is redacted as the producer would have.
            redactor = self.runtime.redactor(status.tenant)
            items = [
                context_to_payload(
                    redact_context(redactor, ACEStepContext(trace=trace)), claims=self.runtime.claims
                )
                for trace in self._traces(keys, state)
            ]
            if len(items) != status.per_epoch:
                raise NightlyInboxChanged(batch_id, len(items), status.per_epoch)
            batches.replace_items(batch_id, items)
        if self.producer.resume(batch_id):
            logger.warning("nightly batch %s: sent the rest of epoch 1 after a crash", batch_id)

    def _wait(
        self, skillbook: str, keys: SkillbookKeys, batch_id: str, lock: Lock
    ) -> tuple[BatchStatus, str]:
        """Wait for the batch, renewing the lock; (its status, why abandoned or "").

        A batch without progress ends the wait with NightlyStalled, or, in the
        ``nightly_max_stalls``-th run in a row, is abandoned; so is a cancelled one.
        """
        handle = BatchHandle(batch_id, self.runtime, self.producer.dispatcher)
        now = time.monotonic()
        deadline = None if self.batch_timeout is None else now + self.batch_timeout
        renew_at = now + self.settings.nightly_lock_seconds / 3
        reconcile_at = now + self.settings.reconcile_interval_seconds
        waiting_since = time.time()  # a resumed batch's old progress does not count against it
        while (status := handle.status()).state is BatchState.RUNNING:
            now = time.monotonic()
            if now > reconcile_at:
                reconcile_batch(self.producer.dispatcher, batch_id)
                reconcile_at = now + self.settings.reconcile_interval_seconds
            if time.time() - max(status.progress_at, waiting_since) > self.stall_seconds:
                stalls = int(self.redis.hincrby(keys.nightly, NIGHTLY_STALLS, 1))
                if stalls < self.settings.nightly_max_stalls:
                    raise NightlyStalled(
                        skillbook, status, self.stall_seconds, stalls, self.settings.nightly_max_stalls
                    )
                reason = f"no progress for {self.stall_seconds:g} s (stalled runs in a row: {stalls})"
                return self._abandon(skillbook, batch_id, reason), reason
            if deadline is not None and now > deadline:
                raise TimeoutError(f"nightly {skillbook}: batch {batch_id} did not finish in time")
            if now > renew_at:
                lock.extend(self.settings.nightly_lock_seconds, replace_ttl=True)  # still alive
                renew_at = now + self.settings.nightly_lock_seconds / 3
            time.sleep(POLL_SECONDS)
        if status.state is BatchState.CANCELLED:  # an operator's choice: its samples are not parked
            return status, "the batch was cancelled (ace-workers batch cancel)"
        return status, ""

    def _abandon(self, skillbook: str, batch_id: str, reason: str) -> BatchStatus:
        """Give the batch up: its unfinished samples become dead letters, so the run can finish."""
        given_up = abandon_batch(self.producer.dispatcher, batch_id, reason)
        logger.error(
            "nightly %s: batch %s abandoned (%s); %d unfinished samples dead-lettered, "
            "`ace-workers dead-letters retry` sends them again",
            skillbook,
            batch_id,
            reason,
            len(given_up),
        )
        return self.runtime.batches.status(batch_id)

    def _finish(
        self, skillbook: str, keys: SkillbookKeys, night: str, state: dict[str, str], report: NightlyReport
    ) -> None:
        started = time.monotonic()
        if self.deduplicate is not None:
            report.dedup = self.deduplicate(skillbook)
        report.durations["dedup"] = round(time.monotonic() - started, 3)
        started = time.monotonic()
        store = self.runtime.store(skillbook)
        version, book = store.snapshot()
        report.checkpoint_version = version
        report.skills_after = len(book)
        if self.settings.nightly_dir:
            folder = Path(self.settings.nightly_dir)
            folder.mkdir(parents=True, exist_ok=True)
            stem = folder / f"{skillbook}-{night}-v{version}"
            write_text_atomically(stem.with_suffix(".json"), book.dumps())
            write_text_atomically(stem.with_suffix(".md"), book.as_markdown())
            report.files = [str(stem.with_suffix(".json")), str(stem.with_suffix(".md"))]
        report.durations["checkpoint"] = round(time.monotonic() - started, 3)
        report.finished_at = datetime.now(UTC).isoformat()
        # One transaction: the cursor moves, the run ends and its report appears together.
        pipe = self.redis.pipeline(transaction=True)
        pipe.hset(keys.nightly, mapping={NIGHTLY_CURSOR: state["range_end"], NIGHTLY_LAST_NIGHT: night})
        pipe.hdel(keys.nightly, *NIGHTLY_RUN_FIELDS)
        pipe.lpush(keys.nightly_reports, json.dumps(report.to_dict()))
        pipe.ltrim(keys.nightly_reports, 0, REPORTS_KEPT - 1)
        # What the cursor has passed is learned: trim it so the inbox stays bounded.
        pipe.xtrim(keys.inbox, minid=state["range_end"], approximate=False)
        pipe.execute()
        logger.info(
            "nightly %s: %d traces, %d done, %d failed, %+d skills, checkpoint v%d",
            skillbook,
            report.traces,
            report.done,
            report.failed,
            report.skills_added,
            version,
        )

    def _inbox_after(
        self, keys: SkillbookKeys, cursor: str, *, until: str = "+", count: int | None = None
    ) -> list[tuple[str, str]]:
        """Inbox entries after ``cursor`` up to ``until``: (entry id, trace JSON), oldest first."""
        entries = self.redis.xrange(keys.inbox, min=f"({cursor}", max=until, count=count) or []
        return [
            (decode_text(entry_id or b""), decode_text((fields or {})[INBOX_TRACE_FIELD.encode()]))
            for entry_id, fields in entries
        ]

    def _state(self, keys: SkillbookKeys) -> dict[str, str]:
        return {decode_text(k): decode_text(v) for k, v in self.redis.hgetall(keys.nightly).items()}


def beat_schedule(settings: WorkerSettings) -> dict[str, dict[str, Any]]:
    """Celery beat entries: one nightly run per configured skillbook, on the execute queue.

    The execute queue, because a run waits for its batch, whose steps run on
    the learn and write queues: a run never waits for a slot it occupies.
    """
    schedule = parse_schedule(settings.nightly_schedule)
    queue = settings.queue_names()["execute"]
    return {
        f"nightly:{name}": {
            "task": NIGHTLY_TASK,
            "schedule": schedule,
            "args": (name,),
            # A run the beat fired while no worker listened is stale by the next firing.
            "options": {"queue": queue, "expires": _expiry_seconds(schedule)},
        }
        for name in settings.nightly_skillbook_names()
    }


def retention_schedule(settings: WorkerSettings) -> dict[str, dict[str, Any]]:
    """The beat entry of the retention sweep: on the nightly schedule, on the execute queue.

    Always there, with or without nightly skillbooks: every fleet keeps records that age.
    """
    schedule = parse_schedule(settings.nightly_schedule)
    return {
        "retention": {
            "task": RETENTION_TASK,
            "schedule": schedule,
            "options": {"queue": settings.queue_names()["execute"], "expires": _expiry_seconds(schedule)},
        }
    }


def _expiry_seconds(schedule: NightlySchedule) -> float:
    return schedule.total_seconds() if isinstance(schedule, timedelta) else 12 * 3600.0


def run_nightly(
    dispatch: Dispatcher,
    skillbook: str,
    scheduled: bool = True,
    deduplicate: Callable[[WorkerRuntime], Deduplicate | None] = dedup_from_settings,
) -> dict[str, Any] | None:
    """What ``ace.nightly`` (sent by beat) does: one nightly run of ``skillbook``, its report as a dict.

    None when another run holds the skillbook (another beat instance or a manual run got there
    first) or the run had nothing to do.
    """
    runtime = dispatch.runtime
    runner = NightlyRunner(Producer(runtime.settings, dispatcher=dispatch), deduplicate=deduplicate(runtime))
    try:
        report = runner.run(skillbook, scheduled=scheduled)
    except NightlyBusy as exc:
        logger.info("%s", exc)
        return None
    return report.to_dict() if report is not None else None
