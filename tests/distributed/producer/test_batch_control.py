"""A batch stores its inputs before sending: a dead producer's batch is finished; one can be cancelled."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from typer.testing import CliRunner

from ace_workers.cli import app as cli_app
from ace_workers.distributed import WorkerSettings
from ace_workers.distributed.producer import producer as producer_module
from ace_workers.distributed.producer.producer import BatchHandle
from ace_workers.distributed.service import Service, build_service, local_workers
from ace_workers.distributed.store.batches import BatchState
from ace_workers.distributed.store.keys import batch_key, running_batches_key
from ace_workers.distributed.worker import epochs as epochs_module
from ace_workers.distributed.worker.chains import enqueue_epoch
from ace_workers.sim import failure_traces
from tests.support.broker_state import steps_in_flight
from tests.support.cli import said
from tests.support.console import running_console
from tests.support.recipes import TEST_RECIPES
from tests.support.waiting import wait_for

TIMEOUT = 60
SENT_BEFORE_CRASH = 2
FAST_LEDGER = {
    "visibility_timeout_seconds": 1,
    "retry_backoff_seconds": 0.01,
    "task_max_retries": 1,
    "reconcile_interval_seconds": 0.2,
}


@pytest.fixture
def prefix() -> str:
    return f"t{uuid.uuid4().hex[:8]}"


@pytest.fixture
def service(redis_url: str, redis_client: redis.Redis, prefix: str) -> Iterator[Service]:
    settings = WorkerSettings(
        redis_url=redis_url, queue_prefix=prefix, sim_trust_threshold=0, recipes=TEST_RECIPES, **FAST_LEDGER
    )
    built = build_service(settings, redis_url=redis_url)
    try:
        yield built
    finally:
        built.close()


@pytest.fixture
def cli_env(clean_env: pytest.MonkeyPatch, redis_url: str, prefix: str) -> pytest.MonkeyPatch:
    clean_env.setenv("ACE_REDIS_URL", redis_url)
    clean_env.setenv("ACE_QUEUE_PREFIX", prefix)
    clean_env.setenv("ACE_RECIPES", TEST_RECIPES)
    return clean_env


def enqueue_and_die_mid_send(service: Service, traces: list[dict[str, str]], batch_id: str) -> None:
    """Enqueue, the producer dying after sending SENT_BEFORE_CRASH samples (all stored before)."""

    def send_some(dispatch: Any, payloads: Any, **kwargs: Any) -> int:
        enqueue_epoch(dispatch, itertools.islice(payloads, SENT_BEFORE_CRASH), **kwargs)
        raise RuntimeError("producer died mid-send")

    with pytest.MonkeyPatch.context() as patch, pytest.raises(RuntimeError, match="died mid-send"):
        patch.setattr(producer_module, "enqueue_epoch", send_some)
        patch.setattr(epochs_module, "enqueue_epoch", send_some)  # send_samples, with admission on
        service.producer.enqueue_traces(traces, "book", batch_id=batch_id)


def test_every_input_is_stored_before_the_first_is_sent(service: Service) -> None:
    enqueue_and_die_mid_send(service, failure_traces(6), "crashed")
    status = service.runtime.batches.status("crashed")
    assert (status.stored, status.enqueued, status.fully_stored) == (6, SENT_BEFORE_CRASH, True)


def test_a_batch_whose_producer_died_mid_send_is_finished_by_the_reconciler(service: Service) -> None:
    enqueue_and_die_mid_send(service, failure_traces(6, topics=3), "crashed")

    with local_workers(service):
        status = BatchHandle("crashed", service.runtime, service.dispatcher).wait(timeout=TIMEOUT)

    assert (status.done, status.failed, status.enqueued) == (6, 0, 6)
    assert service.runtime.batches.redrives("crashed") == {}  # sent for the first time, not again
    assert len(service.runtime.skillbook("book").view().skills()) == 3


def test_batch_resume_sends_what_a_dead_producer_never_sent(
    service: Service, cli_env: pytest.MonkeyPatch
) -> None:
    enqueue_and_die_mid_send(service, failure_traces(5), "crashed")

    with local_workers(service):
        result = CliRunner().invoke(cli_app, ["batch", "resume", "crashed"])
        handle = BatchHandle("crashed", service.runtime)  # no app: only the CLI resumed it
        status = handle.wait(timeout=TIMEOUT)

    assert result.exit_code == 0, result.output
    assert "batch crashed: 3 samples never sent now on the way" in said(result.output)
    assert (status.done, status.failed, status.enqueued) == (5, 0, 5)


def test_the_consoles_resume_sends_what_a_dead_producer_never_sent(service: Service) -> None:
    enqueue_and_die_mid_send(service, failure_traces(5), "crashed")

    with local_workers(service), running_console(service) as console:
        with console.client(token=console.token) as client:
            answer = client.post("/api/batches/crashed/resume", json={})
        status = BatchHandle("crashed", service.runtime).wait(timeout=TIMEOUT)

    assert answer.status_code == 200, answer.text
    assert answer.json()["sent"] == 5 - SENT_BEFORE_CRASH
    assert (status.done, status.failed, status.enqueued) == (5, 0, 5)


def test_a_batch_its_producer_left_half_stored_is_refused_by_resume_naming_the_counts(
    service: Service, cli_env: pytest.MonkeyPatch
) -> None:
    batches = service.runtime.batches
    batches.create(
        "half", skillbook="book", recipe="trace_analyser", per_epoch=4, epochs=1, skills_at_start=0
    )
    batches.store_items("half", [{"trace": {"question": f"q{n}"}} for n in range(2)])

    result = CliRunner().invoke(cli_app, ["batch", "resume", "half"])

    assert result.exit_code == 4  # refused, as the console refuses it (409): the same operation
    assert said(result.output) == (
        "error: batch half stores 2 of its 4 inputs (its producer died while storing them): "
        "it cannot be resumed; cancel it and send the inputs again"
    )
    assert batches.status("half").enqueued == 0


def test_an_input_that_fails_while_stored_cancels_the_batch_and_sends_nothing(
    service: Service, redis_client: redis.Redis
) -> None:
    def traces() -> Iterator[dict[str, str]]:
        yield from failure_traces(2)
        raise OSError("the trace source went away")

    with pytest.raises(OSError, match="went away"):
        service.producer.enqueue_traces(traces(), "book", batch_id="broken", count=4)

    assert service.runtime.batches.status("broken").state is BatchState.CANCELLED
    assert redis_client.llen(service.runtime.queue("learn")) == 0


def test_a_cancelled_batch_runs_none_of_its_queued_steps_and_expires(
    service: Service, cli_env: pytest.MonkeyPatch, redis_client: redis.Redis, prefix: str
) -> None:
    handle = service.producer.enqueue_traces(failure_traces(4), "book")
    queue = service.runtime.queue("learn")
    assert redis_client.llen(queue) == 4

    result = CliRunner().invoke(cli_app, ["batch", "cancel", handle.batch_id])
    with local_workers(service):
        # The workers take the messages, skip them and acknowledge them...
        wait_for(lambda: steps_in_flight(service) == 0, TIMEOUT, "the workers to take every message")

    assert result.exit_code == 0, result.output
    assert "cancelled: 0 done, 0 failed, 0 running, 0 queued, 4 cancelled of 4" in said(result.output)
    assert handle.wait(timeout=1).state is BatchState.CANCELLED
    assert service.runtime.skillbook("book").view().skills() == []  # ...and run none of their steps
    assert (
        0
        < redis_client.ttl(batch_key(prefix, handle.batch_id))
        <= service.runtime.settings.result_ttl_seconds
    )
    assert not redis_client.sismember(running_batches_key(prefix), handle.batch_id)


def test_resume_and_cancel_name_an_unknown_batch(
    cli_env: pytest.MonkeyPatch, redis_client: redis.Redis
) -> None:
    for command in ("resume", "cancel"):
        result = CliRunner().invoke(cli_app, ["batch", command, "nosuch"])
        assert result.exit_code == 2
        assert "no batch 'nosuch'" in said(result.output)
