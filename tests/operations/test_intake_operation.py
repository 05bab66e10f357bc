"""accept_traces keeps an Idempotency-Key only for a batch that runs: a send that failed before its
batch ran frees the key for the retry, one that failed mid-send keeps it (the retry answers that batch)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
import redis

from ace_workers.distributed.settings import WorkerSettings
from ace_workers.operations import FleetClient, operator
from ace_workers.operations.intake import accept_traces

TRACES = [{"question": "2+2?", "answer": "5", "feedback": "Incorrect."}]


@pytest.fixture
def fleet(redis_client: redis.Redis, redis_url: str) -> Iterator[FleetClient]:
    client = FleetClient(WorkerSettings(queue_prefix="opintake"), redis_url)
    try:
        yield client
    finally:
        client.close()


def accept(fleet: FleetClient, send: Callable[[str], object]) -> str:
    result = accept_traces(
        fleet,
        operator("user:tests"),
        TRACES,
        skillbook="book",
        recipe="trace_analyser",
        epochs=1,
        send=send,
        idempotency_key="k",
    )
    return result.batch_id


def test_a_send_that_failed_before_its_batch_ran_frees_the_key(fleet: FleetClient) -> None:
    def lost(batch_id: str) -> None:
        raise ConnectionError("the broker went away")

    with pytest.raises(ConnectionError):
        accept(fleet, lost)
    sent: list[str] = []
    batch_id = accept(fleet, sent.append)
    assert sent == [batch_id]  # the retry sent: no batch ran under the key


def test_a_send_that_failed_mid_batch_keeps_the_key_for_that_batch(fleet: FleetClient) -> None:
    made: list[str] = []

    def half_sent(batch_id: str) -> None:
        fleet.batches.create(
            batch_id, skillbook="book", recipe="trace_analyser", per_epoch=1, epochs=1, skills_at_start=0
        )
        made.append(batch_id)
        raise ConnectionError("lost after the batch was made")

    with pytest.raises(ConnectionError):
        accept(fleet, half_sent)
    sent: list[str] = []
    assert accept(fleet, sent.append) == made[0]
    assert sent == []
