"""A fleet whose recipe settings disagree says so before it loses work, in one line naming the setting."""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from ace_workers.distributed import WorkerSettings
from ace_workers.distributed.producer.producer import BatchHandle
from ace_workers.distributed.service import Service, build_service, local_workers
from ace_workers.distributed.store.batches import BatchState
from ace_workers.distributed.store.keys import fleet_workers_key
from ace_workers.distributed.worker.dead_letters import read_dead_letters, retry_dead_letters
from ace_workers.distributed.worker.errors import FleetSettingsMismatch, RecipeShapeMismatch
from ace_workers.distributed.worker.fleet import FRESH_SECONDS, check_message_shape
from ace_workers.sim import failure_traces
from tests.support.cli import run_console_script
from tests.support.recipes import TEST_RECIPES
from tests.support.waiting import wait_for

TIMEOUT = 60


@pytest.fixture
def prefix() -> str:
    return f"t{uuid.uuid4().hex[:8]}"


def make_service(redis_url: str, prefix: str, **settings: object) -> Service:
    options = {"queue_prefix": prefix, "sim_trust_threshold": 0, "recipes": TEST_RECIPES, **settings}
    return build_service(WorkerSettings(redis_url=redis_url, **options), redis_url=redis_url)  # type: ignore[arg-type]


@pytest.fixture
def workers(redis_url: str, redis_client: redis.Redis, prefix: str) -> Iterator[Service]:
    """The fleet's side: dedup off (the default)."""
    built = make_service(redis_url, prefix, retry_backoff_seconds=0.01)
    try:
        yield built
    finally:
        built.close()


@pytest.fixture
def deduplicating_producer(redis_url: str, prefix: str) -> Iterator[Service]:
    """A producer given ACE_DEDUP_PROVIDER where the workers were not: its chains have one step more."""
    built = make_service(redis_url, prefix, dedup_provider="litellm")
    try:
        yield built
    finally:
        built.close()


def test_a_producer_whose_settings_differ_from_a_running_worker_refuses_in_one_line(
    workers: Service, deduplicating_producer: Service, redis_client: redis.Redis
) -> None:
    with local_workers(workers, learn_threads=1), pytest.raises(FleetSettingsMismatch) as refused:
        deduplicating_producer.producer.enqueue_traces(failure_traces(3), "book")
    message = str(refused.value)
    assert "\n" not in message
    assert "ACE_DEDUP_PROVIDER is 'litellm' in this process but 'off' on worker " in message
    assert "nothing was sent" in message
    assert deduplicating_producer.runtime.batches.running() == []
    assert redis_client.llen(workers.runtime.queue("learn")) == 0


def test_workers_forget_their_record_when_they_stop_and_a_stale_record_is_ignored(
    workers: Service, deduplicating_producer: Service, redis_client: redis.Redis, prefix: str
) -> None:
    with local_workers(workers, learn_threads=1):
        assert redis_client.hlen(fleet_workers_key(prefix)) == 2  # the learn+execute worker and the writer
    assert redis_client.hlen(fleet_workers_key(prefix)) == 0
    # A worker killed without its stop leaves its record; once stale, it is nobody's.
    stale = {"settings": {"ACE_DEDUP_PROVIDER": "off"}, "recipes": {}, "at": time.time() - FRESH_SECONDS - 1}
    redis_client.hset(fleet_workers_key(prefix), "learn@gone", json.dumps(stale))
    handle = deduplicating_producer.producer.enqueue_traces(failure_traces(2), "book")
    assert handle.status().enqueued == 2


def test_a_worker_fails_a_message_of_another_shape_naming_the_setting_and_a_retry_works_once_they_agree(
    workers: Service, deduplicating_producer: Service
) -> None:
    # Sent while no worker ran to say otherwise: each chain has a DeduplicateStep the workers lack.
    sent = deduplicating_producer.producer.enqueue_traces(failure_traces(4), "book")
    handle = BatchHandle(sent.batch_id, workers.runtime, workers.dispatcher)
    with local_workers(workers, learn_threads=2):
        failed = wait_for(
            lambda: (s := handle.status()).state is BatchState.FAILED and s, TIMEOUT, "the samples to fail"
        )
        assert (failed.done, failed.failed) == (0, 4)
        errors = handle.errors()
        assert [error["index"] for error in errors] == [1, 2, 3, 4]
        for error in errors:
            assert error["error"].startswith("RecipeShapeMismatch: recipe 'trace_analyser' differs")
            assert "ACE_DEDUP_PROVIDER is 'off' in this worker (" in error["error"]
            assert "but 'litellm' where the sample was sent" in error["error"]
            assert "IndexError" not in error["error"]
        assert len(read_dead_letters(workers.runtime)) == 4

        # Retried from a process whose settings agree with the workers': the samples run.
        report = retry_dead_letters(workers.dispatcher)
        assert (report.sent, report.kept) == (4, [])
        done = wait_for(
            lambda: (s := handle.status()).state is BatchState.DONE and s, TIMEOUT, "the retried samples"
        )
    assert (done.done, done.failed, done.retried) == (4, 0, 4)
    assert read_dead_letters(workers.runtime) == []


def test_retrying_dead_letters_from_a_process_that_disagrees_with_the_workers_is_refused(
    workers: Service, deduplicating_producer: Service
) -> None:
    sent = deduplicating_producer.producer.enqueue_traces(failure_traces(2), "book")
    handle = BatchHandle(sent.batch_id, workers.runtime, workers.dispatcher)
    with local_workers(workers, learn_threads=1):
        wait_for(lambda: handle.status().failed == 2, TIMEOUT, "the samples to fail")
        with pytest.raises(FleetSettingsMismatch, match="ACE_DEDUP_PROVIDER"):
            retry_dead_letters(deduplicating_producer.dispatcher)
    assert len(read_dead_letters(workers.runtime)) == 2  # kept, for a retry that can succeed


def test_a_recipe_of_your_own_that_a_worker_maps_elsewhere_is_refused(
    workers: Service, redis_url: str, prefix: str
) -> None:
    other = make_service(redis_url, prefix, recipes="choosy=tests.support.recipes:failing_recipe")
    try:
        with local_workers(workers, learn_threads=1), pytest.raises(FleetSettingsMismatch) as refused:
            other.producer.enqueue_traces(failure_traces(1), "book", recipe="choosy")
    finally:
        other.close()
    assert (
        "ACE_RECIPES maps recipe 'choosy' to 'tests.support.recipes:failing_recipe' in this process but to "
        in (str(refused.value))
    )


def test_the_cli_refuses_a_batch_the_workers_would_fail_in_one_line_with_exit_2(
    workers: Service,
    redis_url: str,
    prefix: str,
    clean_env: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    traces = tmp_path / "traces.jsonl"
    traces.write_text("".join(json.dumps(trace) + "\n" for trace in failure_traces(2)))
    for name, value in {
        "ACE_REDIS_URL": redis_url,
        "ACE_QUEUE_PREFIX": prefix,
        "ACE_RECIPES": TEST_RECIPES,
        "ACE_DEDUP_PROVIDER": "litellm",
    }.items():
        clean_env.setenv(name, value)
    with local_workers(workers, learn_threads=1):
        refused = run_console_script(clean_env, capsys, "enqueue", str(traces), "--skillbook", "book")
    assert refused.code == 2
    assert refused.out == ""
    assert re.fullmatch(
        r"error: ACE_DEDUP_PROVIDER is 'litellm' in this process but 'off' on worker \S+@\S+: give the "
        r"producer and every worker the same value \(nothing was sent\)\n",
        refused.err,
    ), refused.err


@pytest.mark.parametrize("shape", ["../../claim:abc", {"digest": "x"}, "f" * 17])
def test_a_message_whose_shape_is_no_digest_fails_and_names_no_key_that_is_read(
    workers: Service, monkeypatch: pytest.MonkeyPatch, shape: object
) -> None:
    _, routes = workers.runtime.pipeline("trace_analyser", "book")
    read: list[str] = []
    real_get = workers.runtime.redis.get
    monkeypatch.setattr(workers.runtime.redis, "get", lambda key: read.append(key) or real_get(key))
    with pytest.raises(RecipeShapeMismatch, match="the message's recipe shape is not a digest"):
        check_message_shape(workers.runtime, "trace_analyser", routes, shape, "learn@here")
    assert read == []
