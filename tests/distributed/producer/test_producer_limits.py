"""The batch-size limit of producers, against a real Redis with in-process workers: never a silent drop."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from ace_workers.distributed.producer.errors import BatchSizeError
from ace_workers.distributed.producer.producer import BatchHandle
from ace_workers.distributed.service import Service, build_service, local_workers
from ace_workers.distributed.settings import WorkerSettings

LIMIT = 3
TIMEOUT = 60


@pytest.fixture
def service(redis_client: redis.Redis, redis_url: str) -> Iterator[Service]:
    """Workers whose batches hold at most LIMIT inputs."""
    settings = WorkerSettings(
        redis_url=redis_url, queue_prefix=f"t{uuid.uuid4().hex[:8]}", max_batch_size=LIMIT
    )
    built = build_service(settings, redis_url=redis_url)
    with local_workers(built, learn_threads=2):
        yield built
    built.close()


class Counted:
    """An iterator over ``n`` traces that counts how many were pulled."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.pulled = 0

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for number in range(self.n):
            self.pulled += 1
            yield {"question": f"q{number}", "answer": "?", "feedback": "Incorrect."}


def batch_keys(client: redis.Redis, service: Service) -> list[bytes]:
    return list(client.scan_iter(match=f"{service.runtime.settings.queue_prefix}:{{batch:*"))


def test_an_iterator_longer_than_the_limit_sends_the_limit_and_says_the_rest_were_not_sent(
    service: Service,
) -> None:
    traces = Counted(LIMIT + 2)
    with pytest.raises(BatchSizeError) as caught:
        service.producer.enqueue_traces(traces, "big")
    error = caught.value
    assert (error.sent, error.limit) == (LIMIT, LIMIT)
    assert error.batch_id is not None
    message = str(error)
    assert f"more than max_batch_size={LIMIT} (ACE_MAX_BATCH_SIZE)" in message
    assert f"the first {LIMIT} inputs were sent as this batch, the rest were not sent" in message
    assert traces.pulled == LIMIT + 1  # one more was read to see it was there, and not sent
    # What was sent is a batch of its own that finishes.
    status = BatchHandle(error.batch_id, service.runtime).wait(timeout=TIMEOUT)
    assert (status.total, status.done, status.failed, status.enqueued) == (LIMIT, LIMIT, 0, LIMIT)


def test_a_declared_count_above_the_limit_is_refused_before_anything_is_read_or_sent(
    service: Service, redis_client: redis.Redis
) -> None:
    traces = Counted(LIMIT + 1)
    with pytest.raises(
        BatchSizeError, match=rf"batch of {LIMIT + 1} inputs is above max_batch_size"
    ) as caught:
        service.producer.enqueue_traces(traces, "big", count=LIMIT + 1)
    assert (caught.value.sent, caught.value.batch_id) == (0, None)
    assert traces.pulled == 0
    assert batch_keys(redis_client, service) == []


def test_a_sequence_above_the_limit_is_refused_before_anything_is_sent(
    service: Service, redis_client: redis.Redis
) -> None:
    with pytest.raises(BatchSizeError, match="nothing was sent"):
        service.producer.enqueue_traces(list(Counted(LIMIT + 1)), "big")
    with pytest.raises(ValueError, match="count=2 but the Sequence holds 3"):
        service.producer.enqueue_traces(list(Counted(3)), "big", count=2)
    assert batch_keys(redis_client, service) == []
    service.producer.enqueue_traces(list(Counted(LIMIT)), "big").wait(timeout=TIMEOUT)
    assert batch_keys(redis_client, service) != []  # the check above would see a batch


def test_a_declared_count_gives_the_streamed_batch_its_total_from_the_start(service: Service) -> None:
    batch_id = uuid.uuid4().hex
    seen_while_sending: list[tuple[int, bool]] = []

    def traces() -> Iterator[dict[str, str]]:
        for number in range(LIMIT):
            if number == 1:
                status = service.runtime.batches.status(batch_id)
                seen_while_sending.append((status.total, status.sealed))
            yield {"question": f"q{number}"}

    handle = service.producer.enqueue_traces(traces(), "known", batch_id=batch_id, count=LIMIT)
    assert seen_while_sending == [(LIMIT, True)]
    status = handle.wait(timeout=TIMEOUT)
    assert (status.total, status.done) == (LIMIT, LIMIT)


def test_an_iterator_longer_than_its_count_sends_the_count(service: Service) -> None:
    traces = Counted(3)
    with pytest.raises(BatchSizeError, match="more than its count 2; the first 2 inputs were sent") as caught:
        service.producer.enqueue_traces(traces, "counted", count=2)
    assert caught.value.sent == 2
    assert caught.value.batch_id is not None
    status = BatchHandle(caught.value.batch_id, service.runtime).wait(timeout=TIMEOUT)
    assert (status.total, status.done) == (2, 2)


def test_an_iterator_shorter_than_its_count_is_closed_at_what_it_sent(service: Service) -> None:
    with pytest.raises(BatchSizeError, match="declared 3 inputs but yielded 2; those 2 were sent") as caught:
        service.producer.enqueue_traces(Counted(2), "short", count=3)
    assert caught.value.batch_id is not None
    # Without closing it at 2 the batch would wait forever for its third sample.
    status = BatchHandle(caught.value.batch_id, service.runtime).wait(timeout=TIMEOUT)
    assert (status.total, status.done) == (2, 2)
