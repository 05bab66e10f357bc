"""Failure drills (issue 6): private Redis, real worker processes, faults; nothing lost or applied twice.

Each test runs one scenario of scenarios.py; ``python benchmarks/drills.py`` runs the
same scenarios and prints their figures.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.drills.harness import BROKERS, CLI, REPO, Outcome, drill_env
from tests.support.drills.scenarios import (
    cli_enqueue,
    llm_rate_limited,
    message_lost,
    redis_full,
    redis_full_mid_batch,
    redis_restarted,
    worker_group_terminated,
    worker_killed,
    worker_stops_consuming,
)

# The 1,250-trace producer's peak RSS may exceed the 250-trace one's by this much. Measured on a
# 2-CPU machine: 73 -> 81 MiB here (a standalone run of the same CLI stays at 73.4 MiB for 250,
# 1,250 and 3,000; the cause of the difference is not pinned down). Before results were ignored
# the producer grew by ~12 KiB per trace (73 -> 178 MiB from 1,000 to 10,000 traces).
RSS_MARGIN_KIB = 16 * 1024

# Each drill starts Redis and worker processes and waits on real time: far over the suite's
# 120 s default on a slow 2-CPU machine. A hung drill still fails, after this many seconds.
DRILL_TIMEOUT = 600
# The CLI drill learns from 1,500 traces end to end; about 10 minutes per 10,000 here.
CLI_DRILL_TIMEOUT = 900


def assert_nothing_lost_or_twice(outcome: Outcome) -> None:
    assert outcome.done + outcome.failed == outcome.total, outcome
    assert outcome.failed == outcome.dead_lettered, outcome
    assert outcome.duplicate_skills == 0, outcome
    assert outcome.steps_applied_twice == 0, outcome
    assert outcome.versions_contiguous, outcome


@pytest.mark.slow
@pytest.mark.timeout(DRILL_TIMEOUT)
@pytest.mark.parametrize(
    ("during_batch", "broker"),
    [(False, "redis"), (True, "redis"), (True, "rabbitmq")],
    ids=["idle", "mid-batch", "mid-batch-rabbitmq"],
)
def test_redis_restart_workers_reconnect_and_the_batch_completes_once(
    tmp_path: Path, during_batch: bool, broker: str
) -> None:
    outcome = redis_restarted(tmp_path, during_batch=during_batch, broker=broker)
    assert_nothing_lost_or_twice(outcome)
    assert (outcome.done, outcome.failed) == (outcome.total, 0), outcome
    assert "workers alive: True" in outcome.notes, outcome
    # Celery may stop a worker on the lost connection; the command starts it again itself.
    # A worker that exited 0 is one that stopped silently and left its queue to nobody.
    (restarted,) = [note for note in outcome.notes if note.startswith("workers the supervisor restarted: ")]
    assert "(exit 0)" not in restarted, outcome


@pytest.mark.slow
@pytest.mark.timeout(DRILL_TIMEOUT)
@pytest.mark.parametrize("broker", BROKERS)
@pytest.mark.parametrize("step", ["ReflectStep", "ApplyStep"])
def test_worker_killed_mid_step_is_replaced_and_every_sample_completes_once(
    tmp_path: Path, step: str, broker: str
) -> None:
    outcome = worker_killed(tmp_path, step=step, broker=broker)
    assert_nothing_lost_or_twice(outcome)
    assert (outcome.done, outcome.failed) == (outcome.total, 0), outcome
    assert outcome.notes[0] != f"done at the kill: {outcome.total}/{outcome.total}", (
        "killed too late: nothing tested"
    )


@pytest.mark.slow
@pytest.mark.timeout(DRILL_TIMEOUT)
def test_sigterm_to_a_prefork_workers_process_group_mid_step_dead_letters_nothing(tmp_path: Path) -> None:
    outcome = worker_group_terminated(tmp_path)
    assert_nothing_lost_or_twice(outcome)
    assert (outcome.done, outcome.failed, outcome.dead_lettered) == (outcome.total, 0, 0), outcome
    assert outcome.notes[0] != f"done at the stop: {outcome.total}/{outcome.total}", "stopped too late"


@pytest.mark.slow
@pytest.mark.timeout(DRILL_TIMEOUT)
@pytest.mark.parametrize("broker", BROKERS)
def test_messages_the_broker_lost_are_sent_again_and_every_sample_completes_once(
    tmp_path: Path, broker: str
) -> None:
    outcome = message_lost(tmp_path, samples=12, lost=2, broker=broker)
    assert_nothing_lost_or_twice(outcome)
    assert (outcome.done, outcome.failed) == (outcome.total, 0), outcome
    assert "samples sent again: 2, re-sends: 2" in outcome.notes, outcome


@pytest.mark.slow
@pytest.mark.timeout(DRILL_TIMEOUT)
def test_a_worker_that_stops_consuming_fails_its_health_check_and_exits_and_a_new_one_finishes(
    tmp_path: Path,
) -> None:
    outcome = worker_stops_consuming(tmp_path, stall_seconds=3.0)
    assert_nothing_lost_or_twice(outcome)
    assert (outcome.done, outcome.failed) == (outcome.total, 0), outcome
    assert "answered ping while stalled: True" in outcome.notes, outcome  # ping alone would not notice
    assert "/healthz before: 200" in outcome.notes, outcome
    assert "/healthz 503: never" not in outcome.notes, outcome
    assert any(note.startswith("exit status 75 after ") for note in outcome.notes), outcome


@pytest.mark.slow
@pytest.mark.timeout(DRILL_TIMEOUT)
def test_a_worker_started_on_a_full_redis_waits_says_so_and_serves_once_there_is_room(tmp_path: Path) -> None:
    outcome = redis_full(tmp_path)
    assert_nothing_lost_or_twice(outcome)
    assert (outcome.done, outcome.failed) == (outcome.total, 0), outcome
    assert "alive while Redis was full: True" in outcome.notes, outcome
    (health,) = [note for note in outcome.notes if note.startswith("/healthz while full: ")]
    assert health.startswith("/healthz while full: 200 Redis is out of memory"), outcome


@pytest.mark.slow
@pytest.mark.timeout(DRILL_TIMEOUT)
def test_redis_out_of_memory_mid_batch_fails_no_sample_and_every_sample_finishes_once(tmp_path: Path) -> None:
    outcome = redis_full_mid_batch(tmp_path)
    assert_nothing_lost_or_twice(outcome)
    assert (outcome.done, outcome.failed, outcome.dead_lettered) == (outcome.total, 0, 0), outcome
    assert "worker log lines naming OutOfMemoryError: 0" not in outcome.notes, "Redis was never full"
    assert f"done when Redis was full: {outcome.total}/{outcome.total}" not in outcome.notes, "full too late"
    # Nothing was acknowledged without its outcome, so nothing had to be sent again.
    assert "samples sent again: 0" in outcome.notes, outcome


@pytest.mark.slow
@pytest.mark.timeout(DRILL_TIMEOUT)
def test_llm_rate_limited_half_the_time_retries_with_backoff_and_completes(tmp_path: Path) -> None:
    outcome = llm_rate_limited(tmp_path, rate=0.5, max_retries=12)
    assert_nothing_lost_or_twice(outcome)
    assert (outcome.done, outcome.failed) == (outcome.total, 0), outcome
    retries = next(note for note in outcome.notes if note.startswith("task retries: "))
    assert int(retries.removeprefix("task retries: ")) > 0, outcome


@pytest.mark.slow
@pytest.mark.timeout(DRILL_TIMEOUT)
def test_llm_always_rate_limited_dead_letters_every_sample_and_workers_stay_healthy(tmp_path: Path) -> None:
    # Every 429 blocks the model for the whole fleet for a second (the shared limiter), so a
    # provider that always answers 429 is called about once a second: 4 samples of 3 attempts
    # each dead-letter in about 15 s, where 12 took more than the drill's minute.
    outcome = llm_rate_limited(tmp_path, rate=1.0, max_retries=2, samples=4)
    assert_nothing_lost_or_twice(outcome)
    assert (outcome.done, outcome.failed, outcome.dead_lettered) == (0, outcome.total, outcome.total), outcome
    assert f"errors reported: {outcome.total}" in outcome.notes, outcome
    assert any("LLMError: simulated rate limit: 429" in note for note in outcome.notes), outcome
    # Two retries per sample before its letter is parked, then the same processes still serve.
    assert f"task retries: {2 * outcome.total}" in outcome.notes, outcome
    assert "workers answering ping: 2/2" in outcome.notes, outcome
    assert "later batch: 4/4 done" in outcome.notes, outcome


@pytest.mark.slow
@pytest.mark.timeout(DRILL_TIMEOUT)
def test_dead_letters_list_shows_the_parked_samples_with_their_errors(tmp_path: Path) -> None:
    from tests.support.drills.harness import PrivateRedis, drill_service, failure_traces

    with PrivateRedis(tmp_path / "redis", persistent=False) as server:
        env, settings = drill_env(server.url, tmp_path, ACE_QUEUE_PREFIX="drill")
        with drill_service(settings, server.url) as service:
            # Park two letters as a worker would, through a batch whose every LLM call fails.
            from tests.support.drills.harness import Fleet

            failing_env = {**env, "ACE_SIM_FAILURE_RATE": "1", "ACE_TASK_MAX_RETRIES": "0"}
            fleet = Fleet(failing_env, tmp_path)
            try:
                fleet.start(service)
                handle = service.producer.enqueue_traces(failure_traces(2), "drillbook")
                handle.wait(timeout=30)
            finally:
                fleet.stop_all()
        listed = subprocess.run(
            [sys.executable, "-c", CLI, "dead-letters", "list"],
            env=env,
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout
    lines = listed.strip().splitlines()
    assert len(lines) == 2, listed
    assert all("LLMError: simulated rate limit: 429" in line for line in lines), listed
    assert all(handle.batch_id in line for line in lines), listed


@pytest.mark.slow
@pytest.mark.timeout(CLI_DRILL_TIMEOUT)
def test_traces_through_the_cli_flat_producer_memory_and_all_accounted_for(tmp_path: Path) -> None:
    # 10,000 traces take this 2-CPU machine about 10 minutes end to end (benchmarks/drills.py
    # runs them); the test holds 250 against 1,250, which before the fix already showed the
    # producer growing by ~12 KiB per trace.
    small, large = cli_enqueue(tmp_path, counts=(250, 1_250))
    for outcome in (small, large):
        assert_nothing_lost_or_twice(outcome)
        assert outcome.total == int(outcome.drill.split()[0].replace(",", "")), outcome
    peak = {
        o.total: int(next(n for n in o.notes if n.startswith("peak_kib=")).removeprefix("peak_kib="))
        for o in (small, large)
    }
    assert peak[large.total] - peak[small.total] < RSS_MARGIN_KIB, peak
