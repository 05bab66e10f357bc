"""Intake: a producer with an API key and intake's URL, no Redis URL, learns into its tenant's skillbook.

Real Redis, intake served for real (uvicorn on a free port), real in-process workers where
learning is checked. Refusals are checked on a fleet without workers: nothing is sent.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import redis
from starlette.responses import PlainTextResponse

from ace_workers.distributed.producer.errors import (
    IntakeBusyError,
    IntakeForbiddenError,
    IntakeUnavailableError,
)
from ace_workers.distributed.producer.http_producer import HttpProducer
from ace_workers.distributed.service import Service
from ace_workers.distributed.tenancy.admission_scheduler import AdmissionState
from ace_workers.intake import build_intake_app
from ace_workers.sim import failure_traces
from tests.support.intake import (
    ALPHA_BOOK,
    BETA_BOOK,
    IntakeKeys,
    intake_without_workers,
    make_tenants_and_keys,
    running_intake,
)
from tests.support.servers import free_port, serving_app
from tests.support.waiting import wait_for
from tests.support.workers import build_test_service, running_service

TRACES_JSONL = "\n".join(json.dumps(trace) for trace in failure_traces(3)) + "\n"


def batches_of(service: Service) -> list[str]:
    """The ids of every batch the fleet made, newest first."""
    return [batch_id for batch_id, _ in service.runtime.batches.recent(100)]


def post(url: str, secret: str | None, body: str, **params: str) -> httpx.Response:
    headers = {"Authorization": f"Bearer {secret}"} if secret else {}
    idempotency = params.pop("idempotency_key", None)
    if idempotency:
        headers["Idempotency-Key"] = idempotency
    return httpx.post(f"{url}/v1/traces", params=params, content=body, headers=headers, timeout=30)


@pytest.fixture
def idle(redis_client: redis.Redis, redis_url: str) -> Iterator[tuple[Service, IntakeKeys, str]]:
    """A fleet without workers (small limits, a window of 2), its tenants' keys, and its intake's URL."""
    settings = {"intake_max_body_bytes": 4096, "admission_window": 2, "intake_max_backlog": 3}
    with intake_without_workers(redis_url, **settings) as running:
        yield running


def test_a_producer_with_only_a_key_and_the_url_learns_into_its_tenants_skillbook(
    redis_client: redis.Redis, redis_url: str
) -> None:
    with running_service(redis_url) as service:
        keys = make_tenants_and_keys(service)
        with running_intake(service) as url:
            producer = HttpProducer(url, keys.alpha_learn)  # no Redis URL anywhere
            batch = producer.enqueue_traces(failure_traces(6), ALPHA_BOOK)
            assert batch.status_url == f"{url}/v1/batches/{batch.batch_id}"
            wait_for(lambda: producer.status(batch.batch_id)["state"] != "running", 60, "the batch to finish")
            status = producer.status(batch.batch_id)
            learned = len(service.runtime.skillbook(ALPHA_BOOK))
    assert (status["state"], status["done"], status["failed"]) == ("done", 6, 0)
    assert learned > 0


def test_a_key_is_refused_another_tenants_skillbook_as_if_it_did_not_exist(
    idle: tuple[Service, IntakeKeys, str],
) -> None:
    service, keys, url = idle
    with pytest.raises(IntakeForbiddenError) as refused:
        HttpProducer(url, keys.alpha_learn).enqueue_traces(failure_traces(2), BETA_BOOK)
    assert refused.value.status == 404
    assert "beta" not in refused.value.message  # the owner is not named
    assert batches_of(service) == []


def test_a_read_key_is_refused_with_403(idle: tuple[Service, IntakeKeys, str]) -> None:
    service, keys, url = idle
    with pytest.raises(IntakeForbiddenError) as refused:
        HttpProducer(url, keys.alpha_read).enqueue_traces(failure_traces(2), ALPHA_BOOK)
    assert refused.value.status == 403
    assert "learn" in refused.value.message
    assert batches_of(service) == []


def test_no_key_is_401(idle: tuple[Service, IntakeKeys, str]) -> None:
    _, _, url = idle
    answer = post(url, None, TRACES_JSONL, skillbook=ALPHA_BOOK)
    assert answer.status_code == 401
    assert answer.json()["error"] == "unauthorized"


def test_a_post_retried_with_the_same_idempotency_key_makes_one_batch(
    idle: tuple[Service, IntakeKeys, str],
) -> None:
    service, keys, url = idle
    first = post(url, keys.alpha_learn, TRACES_JSONL, skillbook=ALPHA_BOOK, idempotency_key="k-1")
    again = post(url, keys.alpha_learn, TRACES_JSONL, skillbook=ALPHA_BOOK, idempotency_key="k-1")
    assert (first.status_code, again.status_code) == (202, 202)
    assert again.json()["batch_id"] == first.json()["batch_id"]
    assert again.json()["replayed"] is True
    assert batches_of(service) == [first.json()["batch_id"]]
    other = post(url, keys.alpha_learn, TRACES_JSONL, skillbook=ALPHA_BOOK, idempotency_key="k-2")
    assert len(set(batches_of(service))) == 2, other.text


def test_another_key_with_the_same_idempotency_key_makes_its_own_batch(
    idle: tuple[Service, IntakeKeys, str],
) -> None:
    service, keys, url = idle
    alpha = post(url, keys.alpha_learn, TRACES_JSONL, skillbook=ALPHA_BOOK, idempotency_key="same")
    beta = post(url, keys.beta_learn, TRACES_JSONL, skillbook=BETA_BOOK, idempotency_key="same")
    assert alpha.json()["batch_id"] != beta.json()["batch_id"]
    assert len(batches_of(service)) == 2


def test_a_body_above_the_limit_is_413(idle: tuple[Service, IntakeKeys, str]) -> None:
    service, keys, url = idle
    answer = post(url, keys.alpha_learn, '{"feedback": "' + "x" * 5000 + '"}\n', skillbook=ALPHA_BOOK)
    assert answer.status_code == 413
    assert "4,096 bytes (ACE_INTAKE_MAX_BODY_BYTES)" in answer.json()["message"]
    assert batches_of(service) == []


def test_deep_json_is_400_naming_its_line(idle: tuple[Service, IntakeKeys, str]) -> None:
    service, keys, url = idle
    deep = '{"a": ' * 300 + "1" + "}" * 300
    answer = post(url, keys.alpha_learn, '{"ok": 1}\n' + deep + "\n", skillbook=ALPHA_BOOK)
    assert answer.status_code == 400
    assert answer.json()["message"].startswith("line 2: JSON nested deeper than 200 levels")
    assert batches_of(service) == []


def test_a_line_that_is_not_an_object_is_400_naming_the_line(idle: tuple[Service, IntakeKeys, str]) -> None:
    service, keys, url = idle
    answer = post(url, keys.alpha_learn, '{"ok": 1}\n\n[1, 2]\n', skillbook=ALPHA_BOOK)
    assert answer.status_code == 400
    assert answer.json()["message"] == (
        "line 3: a trace must be a JSON object, not list; nothing was enqueued"
    )
    assert batches_of(service) == []


def test_a_json_array_names_the_trace_that_is_not_an_object(idle: tuple[Service, IntakeKeys, str]) -> None:
    _, keys, url = idle
    answer = post(url, keys.alpha_learn, '[{"ok": 1}, "text"]', skillbook=ALPHA_BOOK)
    assert answer.status_code == 400
    assert answer.json()["message"].startswith("trace 2: a trace must be a JSON object, not str")


def test_an_unknown_field_is_400_naming_it(idle: tuple[Service, IntakeKeys, str]) -> None:
    _, keys, url = idle
    answer = post(url, keys.alpha_learn, TRACES_JSONL, skillbook=ALPHA_BOOK, epoch="2")
    assert answer.status_code == 400
    assert answer.json()["message"].startswith("field epoch: unknown")


def fill_admission(service: Service) -> AdmissionState:
    """A batch of 10 samples with the window of 2 in flight: 8 wait, above the backlog of 3."""
    admission = AdmissionState(service.runtime.redis, prefix=service.runtime.settings.queue_prefix)
    admission.open("busy-batch", tenant="default", limit=10, per_epoch=10)
    admission.admit(2, {})
    return admission


def test_a_full_window_with_a_backlog_is_429_with_retry_after(idle: tuple[Service, IntakeKeys, str]) -> None:
    service, keys, url = idle
    fill_admission(service)
    answer = post(url, keys.alpha_learn, TRACES_JSONL, skillbook=ALPHA_BOOK, idempotency_key="k")
    assert answer.status_code == 429
    assert answer.headers["retry-after"] == "3"  # (8 waiting - 3 allowed) / window of 2, rounded up
    assert "8 samples wait, above 3 (ACE_INTAKE_MAX_BACKLOG)" in answer.json()["message"]
    assert batches_of(service) == []


def test_the_http_producer_waits_out_a_429_and_sends_once_with_the_same_key(
    idle: tuple[Service, IntakeKeys, str],
) -> None:
    service, keys, url = idle
    admission = fill_admission(service)
    waits: list[float] = []

    def wait(seconds: float) -> None:  # the fleet drains while the producer waits
        waits.append(seconds)
        admission.forget("busy-batch")

    batch = HttpProducer(url, keys.alpha_learn, sleep=wait).enqueue_traces(failure_traces(2), ALPHA_BOOK)
    assert waits == [3.0]
    assert batches_of(service) == [batch.batch_id]


def test_the_http_producer_raises_busy_once_its_retries_are_spent(
    idle: tuple[Service, IntakeKeys, str],
) -> None:
    service, keys, url = idle
    fill_admission(service)
    producer = HttpProducer(url, keys.alpha_learn, retries=2, sleep=lambda seconds: None)
    with pytest.raises(IntakeBusyError) as busy:
        producer.enqueue_traces(failure_traces(2), ALPHA_BOOK)
    assert (busy.value.status, busy.value.retry_after) == (429, 3.0)
    assert batches_of(service) == []


def test_a_batchs_status_is_the_keys_tenants_only(idle: tuple[Service, IntakeKeys, str]) -> None:
    _, keys, url = idle
    batch = HttpProducer(url, keys.alpha_learn).enqueue_traces(failure_traces(2), ALPHA_BOOK)
    own = httpx.get(batch.status_url, headers={"Authorization": f"Bearer {keys.alpha_read}"})
    foreign = httpx.get(batch.status_url, headers={"Authorization": f"Bearer {keys.beta_learn}"})
    assert (own.status_code, own.json()["total"]) == (200, 2)
    assert foreign.status_code == 404


class LoseFirstAnswer:
    """Intake whose first answer to a POST is lost on the way back: the batch is made, the
    producer sees a 502 (a proxy that timed out), as after a dropped connection."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.lost = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or self.lost:
            await self.app(scope, receive, send)
            return
        self.lost += 1

        async def swallow(message: Any) -> None:
            pass

        await self.app(scope, receive, swallow)
        await PlainTextResponse("bad gateway", 502)(scope, receive, send)


def test_a_lost_answer_is_retried_with_the_same_key_and_makes_one_batch(
    redis_client: redis.Redis, redis_url: str
) -> None:
    service = build_test_service(redis_url)
    try:
        keys = make_tenants_and_keys(service)
        lossy = LoseFirstAnswer(build_intake_app(service, host="127.0.0.1"))
        with serving_app(lossy) as url:
            batch = HttpProducer(url, keys.alpha_learn, sleep=lambda seconds: None).enqueue_traces(
                failure_traces(3), ALPHA_BOOK
            )
        assert lossy.lost == 1
        assert batch.replayed is True
        assert (batch.skillbook, batch.traces) == (ALPHA_BOOK, 3)
        assert batches_of(service) == [batch.batch_id]
    finally:
        service.close()


def test_an_intake_that_does_not_answer_raises_unavailable_after_the_retries() -> None:
    waits: list[float] = []
    producer = HttpProducer(
        f"http://127.0.0.1:{free_port()}", "ace_0123abcd_" + "x" * 24, retries=2, sleep=waits.append
    )
    with pytest.raises(IntakeUnavailableError) as unavailable:
        producer.enqueue_traces(failure_traces(1), ALPHA_BOOK)
    assert unavailable.value.status == 0
    assert waits == [0.5, 1.0]
