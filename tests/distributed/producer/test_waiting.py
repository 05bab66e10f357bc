"""A Python caller waiting for a batch is told at once when no worker serves it, and hears its progress."""

from __future__ import annotations

import logging

import pytest
import redis

from ace_workers.distributed import DistributedRunner, NoWorkersError, Producer
from ace_workers.distributed.service import local_workers
from ace_workers.sim import failure_traces
from tests.support.workers import build_test_service


def test_wait_with_no_worker_raises_the_error_the_command_line_gives(
    redis_client: redis.Redis, redis_url: str
) -> None:
    service = build_test_service(redis_url, worker_reply_seconds=0.3)
    prefix = service.runtime.settings.queue_prefix
    try:
        handle = service.producer.enqueue_traces(failure_traces(2), "lonely")
        # Raised instead of waiting out the timeout (that would be a TimeoutError).
        with pytest.raises(NoWorkersError, match=f"no worker serves {prefix}.learn, {prefix}.write"):
            handle.wait(timeout=60)
    finally:
        service.close()


def test_a_distributed_runner_with_no_worker_raises_before_sending_anything(
    redis_client: redis.Redis, redis_url: str
) -> None:
    service = build_test_service(redis_url, worker_reply_seconds=0.3)
    try:
        runner = DistributedRunner(service.producer, skillbook="lonely", recipe="ace")
        with pytest.raises(NoWorkersError, match=f"{service.runtime.settings.queue_prefix}.execute"):
            runner.run([{"question": "q", "ground_truth": "a"}])
        assert runner.last_batch is None
    finally:
        service.close()


def test_wait_logs_the_progress_of_a_batch_the_workers_run(
    redis_client: redis.Redis, redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    service = build_test_service(redis_url, sim_latency_seconds=0.05)
    try:
        with local_workers(service, learn_threads=1, serve_execute=False):
            producer = Producer(service.runtime.settings)  # a caller of its own, as a script has
            try:
                handle = producer.enqueue_traces(failure_traces(6), "watched")
                with caplog.at_level(logging.INFO, logger="ace_workers.distributed.producer.producer"):
                    status = handle.wait(timeout=120, progress_seconds=0.05)
            finally:
                producer.close()
    finally:
        service.close()

    assert (status.done, status.total) == (6, 6)
    lines = [
        r.getMessage() for r in caplog.records if r.getMessage().startswith(f"batch {handle.batch_id}: ")
    ]
    assert lines
    assert all(" done, " in line and " failed, " in line and " queued of 6 after " in line for line in lines)
