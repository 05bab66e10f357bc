"""Nightly learning against the real Redis: inbox, cursor, lock, resume after a crash, and real beats."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import redis
from celery import Celery
from celery.beat import ScheduleEntry
from celery.schedules import crontab

from ace_workers.distributed.errors import InvalidSettingError
from ace_workers.distributed.ops.errors import NightlyBusy
from ace_workers.distributed.ops.nightly import NightlyRunner, beat_schedule
from ace_workers.distributed.ops.schedule import parse_schedule
from ace_workers.distributed.service import Service, build_service, local_workers
from ace_workers.distributed.settings import WorkerSettings
from ace_workers.distributed.store.keys import NIGHTLY_CURSOR, NIGHTLY_LAST_NIGHT
from ace_workers.distributed.worker.errors import PayloadError
from ace_workers.sim import failure_traces
from tests.support.waiting import wait_for

ACE_WORKERS = str(Path(sys.executable).with_name("ace-workers"))


@pytest.fixture
def settings(redis_client: redis.Redis, redis_url: str, tmp_path: Path) -> WorkerSettings:
    return WorkerSettings(
        redis_url=redis_url,
        queue_prefix=f"t{uuid.uuid4().hex[:8]}",
        sim_trust_threshold=0,
        nightly_dir=str(tmp_path / "nightly"),
    )


@pytest.fixture
def service(settings: WorkerSettings) -> Iterator[Service]:
    built = build_service(settings, redis_url=settings.redis_url or "")
    with local_workers(built, learn_threads=4):
        yield built
    built.close()


def test_a_run_learns_the_inbox_moves_the_cursor_and_reports(service: Service, tmp_path: Path) -> None:
    producer = service.producer
    assert producer.append_to_inbox(failure_traces(10), "book") == 10
    runner = NightlyRunner(producer, batch_timeout=60)
    assert runner.pending("book") == 10
    report = runner.run("book", night="2026-11-22")
    assert report is not None
    assert (report.traces, report.done, report.failed, report.resumed) == (10, 10, 0, False)
    assert report.skills_before == 0
    assert report.skills_after == 5  # one rule per topic
    assert report.checkpoint_version == service.runtime.store("book").version()
    saved = json.loads(Path(report.files[0]).read_text())
    assert len(saved["skills"]) == 5
    assert Path(report.files[1]).read_text().startswith("#")
    assert runner.pending("book") == 0
    assert service.runtime.redis.xlen(runner.keys("book").inbox) <= 1  # learned entries are trimmed
    assert [r.run_id for r in runner.reports("book")] == [report.run_id]


def test_a_night_runs_once_when_scheduled_but_a_manual_run_takes_new_traces(service: Service) -> None:
    runner = NightlyRunner(service.producer, batch_timeout=60)
    service.producer.append_to_inbox(failure_traces(4), "book")
    assert runner.run("book", night="2026-11-22") is not None
    service.producer.append_to_inbox(failure_traces(3), "book")
    assert runner.run("book", night="2026-11-22") is None  # the second beat of the night
    manual = runner.run("book", night="2026-11-22", scheduled=False)
    assert manual is not None
    assert manual.traces == 3
    nextnight = runner.run("book", night="2026-11-23")
    assert nextnight is not None
    assert nextnight.traces == 0


def test_a_run_holding_the_lock_keeps_every_other_run_out(service: Service) -> None:
    runner = NightlyRunner(service.producer, batch_timeout=60)
    lock = service.runtime.redis.lock(runner.keys("book").nightly_lock, timeout=30)
    assert lock.acquire(blocking=False)
    with pytest.raises(NightlyBusy, match="'book' is in progress"):
        runner.run("book", scheduled=False)
    lock.release()
    assert runner.run("book", scheduled=False) is not None


def test_a_crashed_run_resumes_its_batch_instead_of_sending_the_traces_again(
    service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    service.producer.append_to_inbox(failure_traces(6), "book")
    runner = NightlyRunner(service.producer, batch_timeout=60)
    finish = NightlyRunner._finish

    def crash(*args: Any) -> None:
        raise RuntimeError("worker lost mid-run")

    monkeypatch.setattr(NightlyRunner, "_finish", crash)
    with pytest.raises(RuntimeError, match="worker lost"):
        runner.run("book", night="2026-11-22")
    assert runner.pending("book") == 6  # the cursor did not move
    monkeypatch.setattr(NightlyRunner, "_finish", finish)
    report = runner.run("book", night="2026-11-22")
    assert report is not None
    assert report.resumed
    assert report.traces == 6
    status = service.runtime.batches.status(report.batch_id)
    assert (status.enqueued, status.done) == (6, 6)  # one batch, sent once
    assert runner.pending("book") == 0
    assert len(runner.reports("book")) == 1


def test_a_bad_trace_appends_nothing_and_names_its_position(service: Service) -> None:
    runner = NightlyRunner(service.producer)
    with pytest.raises(PayloadError, match="trace 3"):
        service.producer.append_to_inbox([{"a": 1}, {"b": 2}, {"c": object()}], "book")
    assert runner.pending("book") == 0


def test_schedules_are_a_utc_crontab_or_seconds() -> None:
    assert parse_schedule("2.5").total_seconds() == 2.5  # type: ignore[union-attr]
    nightly = parse_schedule("0 2 * * *")
    assert isinstance(nightly, crontab)
    assert nightly.hour == {2}
    assert nightly.minute == {0}
    with pytest.raises(InvalidSettingError, match="ACE_NIGHTLY_SCHEDULE"):
        WorkerSettings(nightly_schedule="at two")
    with pytest.raises(InvalidSettingError, match="ACE_NIGHTLY_SKILLBOOKS"):
        WorkerSettings(nightly_skillbooks="good,bad}name")


def due_at(entry: ScheduleEntry, now: datetime) -> tuple[bool, float]:
    """Whether ``entry`` is due at ``now``, and the seconds until its next run."""
    entry.schedule.nowfun = lambda: now
    due, next_in = entry.is_due()
    return bool(due), float(next_in)


@pytest.mark.parametrize("app_timezone", ["UTC", "Asia/Tokyo"])
def test_the_nightly_crontab_is_due_at_its_utc_minute_whatever_the_app_timezone(app_timezone: str) -> None:
    settings = WorkerSettings(nightly_skillbooks="book", nightly_schedule="30 2 * * *")
    app = Celery(set_as_current=False)
    app.conf.timezone = app_timezone
    # As beat builds it: the entry binds the schedule to the app.
    entry = ScheduleEntry(
        name="nightly:book",
        app=app,
        last_run_at=datetime(2026, 11, 21, 2, 30, 5, tzinfo=UTC),
        **beat_schedule(settings)["nightly:book"],
    )
    assert isinstance(entry.schedule, crontab)
    # 17:30 UTC is 02:30 in Tokyo: a crontab in the app's timezone would fire here.
    assert due_at(entry, datetime(2026, 11, 21, 17, 30, 1, tzinfo=UTC)) == (False, 9 * 3600 - 1)
    assert due_at(entry, datetime(2026, 11, 22, 2, 29, tzinfo=UTC)) == (False, 60.0)
    due, next_in = due_at(entry, datetime(2026, 11, 22, 2, 30, 1, tzinfo=UTC))
    assert due
    assert next_in == pytest.approx(24 * 3600 - 1)


@pytest.mark.slow
def test_two_beats_firing_every_second_make_one_run_a_night(
    service: Service, settings: WorkerSettings, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="ace_workers.distributed.ops.nightly")
    service.producer.append_to_inbox(failure_traces(5), "book")
    env = {
        **os.environ,
        "ACE_REDIS_URL": settings.redis_url or "",
        "ACE_QUEUE_PREFIX": settings.queue_prefix,
        "ACE_NIGHTLY_SKILLBOOKS": "book",
        "ACE_NIGHTLY_SCHEDULE": "1",
    }
    beats = [
        subprocess.Popen(
            [ACE_WORKERS, "beat", "--schedule-file", str(Path(settings.nightly_dir or "") / f"beat{n}")],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        for n in range(2)
    ]
    runner = NightlyRunner(service.producer)
    try:
        wait_for(lambda: runner.reports("book"), 45, "the night's run to report", every=0.2)
        # Both beats keep firing, and each firing finds the night has its run.
        wait_for(lambda: skips(caplog) >= 4, 30, "four more firings to be skipped", every=0.1)
    finally:
        for beat in beats:
            beat.terminate()
        errors = [beat.communicate(timeout=20)[1].decode() for beat in beats]
    reports = runner.reports("book")
    assert len(reports) == 1, errors
    assert reports[0].traces == 5
    assert reports[0].done == 5


def skips(caplog: pytest.LogCaptureFixture) -> int:
    """How many nightly runs were skipped as their night already had its run."""
    return sum("already has its run; skipped" in record.getMessage() for record in caplog.records)


def test_settings_carry_the_nightly_options_from_the_environment() -> None:
    settings = WorkerSettings.from_env(
        {"ACE_NIGHTLY_SKILLBOOKS": "a, b", "ACE_NIGHTLY_EPOCHS": "2", "ACE_NIGHTLY_SCHEDULE": "30 1 * * *"}
    )
    assert settings.nightly_skillbook_names() == ["a", "b"]
    assert dataclasses.replace(settings).nightly_epochs == 2


def test_a_finished_run_leaves_only_the_cursor_and_the_night_in_the_nightly_hash(service: Service) -> None:
    service.producer.append_to_inbox(failure_traces(2), "book")
    runner = NightlyRunner(service.producer, batch_timeout=60)
    assert runner.run("book", night="2026-11-22") is not None
    fields = {field.decode() for field in service.runtime.redis.hkeys(runner.keys("book").nightly)}
    assert fields == {NIGHTLY_CURSOR, NIGHTLY_LAST_NIGHT}
