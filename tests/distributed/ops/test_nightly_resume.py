"""Nightly runs that crash or stall part-way, against the real Redis and real in-process workers."""

from __future__ import annotations

import itertools
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import redis

from ace_workers.distributed.ops.errors import NightlyStalled
from ace_workers.distributed.ops.nightly import NightlyRunner, stall_seconds
from ace_workers.distributed.producer import producer as producer_module
from ace_workers.distributed.service import Service, build_service, local_workers
from ace_workers.distributed.settings import WorkerSettings
from ace_workers.distributed.store.batches import BatchState
from ace_workers.distributed.store.changelog import ChangeKind
from ace_workers.distributed.worker import epochs as epochs_module
from ace_workers.distributed.worker.chains import enqueue_epoch
from ace_workers.distributed.worker.dead_letters import read_dead_letters, retry_dead_letters
from ace_workers.sim import failure_traces
from tests.support.waiting import wait_for

TRACES = 8
SENT_BEFORE_CRASH = 3
# A sample counts as lost after ~1 s without progress, and the waiting run reconciles every 0.2 s.
FAST_LEDGER = {
    "visibility_timeout_seconds": 1,
    "retry_backoff_seconds": 0.01,
    "task_max_retries": 1,
    "reconcile_interval_seconds": 0.2,
}


@contextmanager
def service_for(redis_url: str, *, workers: bool = True, **settings: Any) -> Iterator[Service]:
    """A service on the test Redis under a fresh prefix, with in-process workers unless told otherwise."""
    options = WorkerSettings(
        redis_url=redis_url, queue_prefix=f"t{uuid.uuid4().hex[:8]}", sim_trust_threshold=0, **settings
    )
    built = build_service(options, redis_url=redis_url)
    try:
        if workers:
            with local_workers(built, learn_threads=4):
                yield built
        else:
            yield built
    finally:
        built.close()


def crash_after_sending(monkeypatch: pytest.MonkeyPatch, service: Service, counted: bool) -> None:
    """Make the producer die after sending ``SENT_BEFORE_CRASH`` samples of the first epoch.

    ``counted``: the batch counted exactly those. Otherwise the producer died between
    counting one more sample and sending it: only the reconciler can find that one.
    """
    if counted:

        def send_some(dispatch: Any, payloads: Any, **kwargs: Any) -> int:
            enqueue_epoch(dispatch, itertools.islice(payloads, SENT_BEFORE_CRASH), **kwargs)
            raise RuntimeError("producer died mid-send")

        monkeypatch.setattr(producer_module, "enqueue_epoch", send_some)
        monkeypatch.setattr(epochs_module, "enqueue_epoch", send_some)  # send_samples, with admission on
        return
    batches = service.runtime.batches
    record_sent = batches.record_sent
    calls = itertools.count(1)

    def count_then_crash(batch_id: str, epoch: int, index: int, **kwargs: Any) -> None:
        record_sent(batch_id, epoch, index, **kwargs)
        if next(calls) == SENT_BEFORE_CRASH + 1:
            raise RuntimeError("producer died mid-send")

    monkeypatch.setattr(batches, "record_sent", count_then_crash)


@pytest.mark.parametrize(("epochs", "counted"), [(1, True), (1, False), (2, True)])
def test_a_run_that_crashed_mid_send_sends_the_rest_and_learns_every_sample_once(
    redis_client: redis.Redis, redis_url: str, monkeypatch: pytest.MonkeyPatch, epochs: int, counted: bool
) -> None:
    with service_for(redis_url, nightly_epochs=epochs, **FAST_LEDGER) as service:
        service.producer.append_to_inbox(failure_traces(TRACES), "book")
        runner = NightlyRunner(service.producer, batch_timeout=60)
        crash_after_sending(monkeypatch, service, counted)
        with pytest.raises(RuntimeError, match="died mid-send"):
            runner.run("book", night="2026-11-22")
        monkeypatch.undo()
        assert runner.pending("book") == TRACES  # the cursor did not move
        batch_id = runner._state(runner.keys("book"))["batch_id"]
        assert service.runtime.batches.status(batch_id).enqueued == SENT_BEFORE_CRASH + (0 if counted else 1)

        report = runner.run("book", night="2026-11-22")

        assert report is not None
        assert report.resumed
        assert report.batch_id == batch_id
        assert (report.traces, report.epochs, report.done, report.failed) == (
            TRACES,
            epochs,
            TRACES * epochs,
            0,
        )
        status = service.runtime.batches.status(batch_id)
        assert (status.total, status.done, status.failed) == (TRACES * epochs, TRACES * epochs, 0)
        expected = {f"e{e}:{i}" for e in range(1, epochs + 1) for i in range(1, TRACES + 1)}
        assert set(service.runtime.batches.records(batch_id)) == expected
        # Learned once: no (sample, step) wrote the skillbook twice, a redelivered one included.
        writes = Counter(
            record.idempotency_key
            for record in service.runtime.store("book").history(limit=1000)
            if record.kind is ChangeKind.APPLY and (record.source or {}).get("batch") == batch_id
        )
        assert len(writes) == TRACES * epochs
        assert max(writes.values()) == 1
        assert service.runtime.store("book").stats()["duplicate_deliveries"] == 0
        # The sample counted but never sent went out once, from the reconciler.
        redrives = service.runtime.batches.redrives(batch_id)
        assert redrives == ({} if counted else {f"e1:{SENT_BEFORE_CRASH + 1}": 1})
        assert report.skills_after == 5  # one rule per topic, no restatement
        # The cursor moved once, past every trace of the run.
        assert runner.pending("book") == 0
        assert [r.run_id for r in runner.reports("book")] == [report.run_id]


def test_a_stalled_batch_ends_the_run_with_a_clear_error_and_the_next_run_finishes_it(
    redis_client: redis.Redis, redis_url: str
) -> None:
    with service_for(redis_url, workers=False) as service:
        service.producer.append_to_inbox(failure_traces(4), "book")
        runner = NightlyRunner(service.producer, stall_after=1.0)
        with pytest.raises(NightlyStalled, match=r"no progress for 1 s \(0 done, 0 failed, 4 sent of 4\)"):
            runner.run("book", night="2026-11-22")
        assert runner._state(runner.keys("book"))["stalls"] == "1"
        assert runner.pending("book") == 4
        assert runner.reports("book") == []
        lock = service.runtime.redis.lock(runner.keys("book").nightly_lock, timeout=5)
        assert lock.acquire(blocking=False)  # the stalled run let go of the lock
        lock.release()
        with local_workers(service, learn_threads=2):
            report = runner.run("book", night="2026-11-22")
        assert report is not None
        assert report.resumed
        assert (report.done, report.failed) == (4, 0)
        assert runner.pending("book") == 0


def apply_writes(service: Service, batch_id: str) -> Counter[str]:
    """The skillbook writes of ``batch_id``'s ApplySteps, by idempotency key."""
    return Counter(
        record.idempotency_key
        for record in service.runtime.store("book").history(limit=1000)
        if record.kind is ChangeKind.APPLY and (record.source or {}).get("batch") == batch_id
    )


@pytest.mark.parametrize("epochs", [1, 2])
def test_a_batch_that_stalls_runs_in_a_row_is_abandoned_reported_and_its_samples_dead_lettered(
    redis_client: redis.Redis, redis_url: str, epochs: int
) -> None:
    with service_for(redis_url, workers=False, nightly_epochs=epochs, nightly_max_stalls=2) as service:
        service.producer.append_to_inbox(failure_traces(4), "book")
        runner = NightlyRunner(service.producer, stall_after=1.0)
        with pytest.raises(NightlyStalled, match=r"stalled runs: 1 of 2; then the batch is abandoned"):
            runner.run("book", night="2026-11-22")

        report = runner.run("book", night="2026-11-22")

        assert report is not None
        assert report.resumed
        assert report.abandoned == "no progress for 1 s (stalled runs in a row: 2)"
        assert (report.done, report.failed) == (0, 4)
        status = service.runtime.batches.status(report.batch_id)
        # Ended at the epoch it stalled in: no later epoch starts.
        assert (status.state, status.epochs, status.total, status.failed) == (BatchState.FAILED, 1, 4, 4)
        assert report.batch_id not in service.runtime.batches.running()
        # The cursor moved and the stall count is gone: the next night does not stall on it again.
        assert runner.pending("book") == 0
        assert "stalls" not in runner._state(runner.keys("book"))
        assert [r.abandoned for r in runner.reports("book")] == [report.abandoned]
        letters = read_dead_letters(service.runtime)
        assert sorted(letter.letter["kwargs"]["sample_index"] for letter in letters if letter.letter) == [
            1,
            2,
            3,
            4,
        ]
        assert all(letter.problem is None for letter in letters)
        assert all(letter.letter for letter in letters)
        assert all(letter.letter["error"].startswith("Abandoned: no progress") for letter in letters)

        # Nothing lost: the broker's copies gone too, the letters alone teach the skillbook.
        with service.app.connection_for_write() as connection:
            connection.default_channel.queue_purge(service.runtime.queue("learn"))
        assert apply_writes(service, report.batch_id) == Counter()
        with local_workers(service, learn_threads=2):
            retried = retry_dead_letters(service.dispatcher)
            wait_for(
                lambda: len(apply_writes(service, report.batch_id)) >= 4,
                60,
                "the four retried samples to be applied",
                every=0.1,
            )
        assert (retried.sent, retried.kept) == (4, [])
        writes = apply_writes(service, report.batch_id)
        assert (len(writes), max(writes.values())) == (4, 1)
        assert len(service.runtime.skillbook("book")) > 0


def test_a_cancelled_batch_ends_the_nightly_run_which_reports_it(
    redis_client: redis.Redis, redis_url: str
) -> None:
    with service_for(redis_url, workers=False) as service:
        service.producer.append_to_inbox(failure_traces(3), "book")
        runner = NightlyRunner(service.producer, stall_after=1.0)
        with pytest.raises(NightlyStalled):
            runner.run("book", night="2026-11-22")
        service.runtime.batches.cancel(runner._state(runner.keys("book"))["batch_id"])

        report = runner.run("book", night="2026-11-22")

        assert report is not None
        assert report.abandoned == "the batch was cancelled (ace-workers batch cancel)"
        assert (report.done, report.failed) == (0, 0)
        assert runner.pending("book") == 0
        assert read_dead_letters(service.runtime) == []  # cancelled on purpose: nothing parked


def test_the_stall_bound_comes_from_the_visibility_timeout_and_the_retry_backoff() -> None:
    settings = WorkerSettings(visibility_timeout_seconds=600, retry_backoff_seconds=2, task_max_retries=3)
    # three retries wait 2, 4 and 8 s nominally; jitter stretches each by at most 1.5x
    assert stall_seconds(settings) == 2 * 600 + 1.5 * (2 + 4 + 8)
