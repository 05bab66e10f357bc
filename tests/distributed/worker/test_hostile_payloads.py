"""Workers trust nothing a step message carries: claim references, trace sizes, batch ids.

Messages are published straight onto a queue as someone with access to the broker would
(tests/support/crafted.py). Real Redis, real in-process workers.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from ace_workers.distributed.producer.producer import BatchHandle
from ace_workers.distributed.service import Service
from ace_workers.distributed.worker.dead_letters import read_dead_letters
from tests.support.crafted import publish_chain, publish_step, trace_payload
from tests.support.waiting import wait_for
from tests.support.workers import running_service

# The workers' ACE_MAX_TRACE_BYTES: small, so an oversized trace is cheap to make.
TRACE_LIMIT = 2000
SECRET = "the value of a key no payload should reach"


@pytest.fixture
def service(redis_client: redis.Redis, redis_url: str) -> Iterator[Service]:
    with running_service(redis_url, learn_threads=1, max_trace_bytes=TRACE_LIMIT) as built:
        yield built


def failure_of(service: Service, payload: dict[str, Any]) -> str:
    """Publish ``payload`` for a batch of its own, wait for its one sample; the sample's error."""
    batch_id = uuid.uuid4().hex
    publish_step(service, payload, batch_id=batch_id)
    handle = BatchHandle(batch_id, service.runtime)
    status = handle.wait(timeout=30)
    assert status.failed == 1, f"the sample was not refused: {status}"
    error: str = handle.errors()[0]["error"]
    return error


def letters(service: Service) -> list[dict[str, Any]]:
    return [letter.letter or {} for letter in read_dead_letters(service.runtime)]


def test_a_claim_reference_to_any_other_key_fails_its_sample_without_reading_it(
    service: Service, redis_client: redis.Redis
) -> None:
    redis_client.set("secretkey", json.dumps(SECRET))
    payload = {**trace_payload(service), "trace": {"claim": "secretkey", "bytes": 10}, "claimed": ["trace"]}
    error = failure_of(service, payload)
    assert error.startswith("PayloadError: trace's claim reference 'secretkey' is not a claim key")
    assert SECRET not in json.dumps(letters(service))


def test_a_claim_whose_value_was_replaced_fails_its_sample_naming_the_key(service: Service) -> None:
    claims = service.runtime.claims
    payload = context_payload_with_claimed_trace(service)
    key = payload["trace"]["claim"]
    claims.redis.set(key, json.dumps(SECRET))
    error = failure_of(service, payload)
    assert f"claim '{key}' holding trace does not hash to its key's SHA-256" in error


def context_payload_with_claimed_trace(service: Service) -> dict[str, Any]:
    """A payload whose (small) trace is claimed as a producer of ours would claim a large one."""
    payload = trace_payload(service)
    data = json.dumps(payload["trace"], separators=(",", ":")).encode("ascii")
    payload["trace"] = {"claim": service.runtime.claims.put(data), "bytes": len(data)}
    payload["claimed"] = ["trace"]
    return payload


def test_a_claimed_trace_of_ours_still_runs(service: Service) -> None:
    batch_id = uuid.uuid4().hex
    publish_chain(service, context_payload_with_claimed_trace(service), batch_id=batch_id)
    status = BatchHandle(batch_id, service.runtime).wait(timeout=30)
    assert (status.done, status.failed) == (1, 0)


def test_an_inline_trace_above_the_limit_fails_its_sample_with_its_size_and_the_limit(
    service: Service,
) -> None:
    payload = {**trace_payload(service), "trace": ["z" * 3000]}
    error = failure_of(service, payload)
    assert error == (
        "PayloadTooLarge: trace is 3,004 bytes as JSON (in the message), above the limit of "
        "2,000 bytes (ACE_MAX_TRACE_BYTES); refused"
    )


def test_a_claimed_trace_above_the_limit_fails_its_sample(service: Service) -> None:
    data = json.dumps(["z" * 3000]).encode()
    ref = {"claim": service.runtime.claims.put(data), "bytes": 10}  # the reference understates it
    payload = {**trace_payload(service), "trace": ref, "claimed": ["trace"]}
    error = failure_of(service, payload)
    assert error.startswith("PayloadTooLarge: trace is 3,004 bytes as JSON (in Redis)")


def test_a_trace_above_the_limit_is_dead_lettered_once_not_retried(service: Service) -> None:
    failure_of(service, {**trace_payload(service), "trace": ["z" * 3000]})
    assert [letter["error"].split(":")[0] for letter in letters(service)] == ["PayloadTooLarge"]


# --- batches that do not exist ------------------------------------------------------------------


def batch_keys(redis_client: redis.Redis, batch_id: str) -> list[bytes]:
    return sorted(redis_client.scan_iter(match=f"*{{batch:{batch_id}}}*"))


def test_messages_for_a_batch_that_does_not_exist_create_no_batch_key(
    service: Service, redis_client: redis.Redis
) -> None:
    for _ in range(3):
        publish_step(service, trace_payload(service), batch_id="many", create_batch=False)
    wait_for(lambda: len(letters(service)) == 3, 30, "three dead letters")
    assert batch_keys(redis_client, "many") == []


def test_a_message_for_a_batch_that_does_not_exist_is_dead_lettered_with_one_line(service: Service) -> None:
    publish_step(service, trace_payload(service), batch_id="many", create_batch=False)
    (letter,) = wait_for(lambda: letters(service), 30, "a dead letter")
    assert letter["error"] == "BatchNotFoundError: no batch 'many' (unknown, or expired after 86400 s)"


def test_a_worker_keeps_serving_after_messages_for_a_batch_that_does_not_exist(service: Service) -> None:
    publish_step(service, trace_payload(service), batch_id="many", create_batch=False)
    wait_for(lambda: letters(service), 30, "a dead letter")
    status = service.producer.enqueue_traces([{"question": "q"}], "after").wait(timeout=60)
    assert (status.done, status.failed) == (1, 0)
