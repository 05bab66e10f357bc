"""The dead letters API: filtered by batch, skillbook and time, and a retry sends back exactly those."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import redis

from ace_workers.distributed.producer.producer import BatchHandle
from ace_workers.distributed.service import Service
from ace_workers.distributed.store.batches import BatchState, BatchStatus
from ace_workers.distributed.worker.dead_letters import read_dead_letters
from tests.support.console import RunningConsole, post_form, running_console
from tests.support.recipes import CHOOSY_HEALED, choosy_traces
from tests.support.waiting import wait_for


@dataclass(frozen=True)
class Failed:
    """Two choosy batches: alpha (skillbook alpha, samples 1 and 3 of 3 failed), beta (1 of 2)."""

    alpha: BatchHandle
    beta: BatchHandle


@pytest.fixture
def failed(fleet: Service, redis_url: str) -> Failed:
    alpha = fleet.producer.enqueue_traces(choosy_traces(redis_url, 3, {1, 3}), "alpha", recipe="choosy")
    beta = fleet.producer.enqueue_traces(choosy_traces(redis_url, 2, {2}), "beta", recipe="choosy")
    for handle, failures in ((alpha, 2), (beta, 1)):
        assert handle.wait(timeout=60).failed == failures
    return Failed(alpha, beta)


def listed(console: RunningConsole, **query: str) -> list[dict[str, Any]]:
    with console.client() as client:
        answer = client.get("/api/dead-letters", params=query)
    assert answer.status_code == 200, answer.text
    letters: list[dict[str, Any]] = answer.json()["letters"]
    return letters


def all_done(handle: BatchHandle, samples: int) -> BatchStatus:
    """The batch's status once it finished again with ``samples`` samples done (its retries ran)."""

    def done() -> BatchStatus | None:
        status = handle.status()
        return status if status.state is BatchState.DONE and status.done == samples else None

    return wait_for(done, 60, f"batch {handle.batch_id} to finish its retried samples")


def test_the_filter_picks_letters_by_batch_skillbook_and_time(
    console: RunningConsole, failed: Failed
) -> None:
    alpha, beta = failed.alpha.batch_id, failed.beta.batch_id

    # Samples 1 and 3 fail on parallel threads: which was parked first is not given.
    assert sorted(letter["sample"] for letter in listed(console, batch=alpha)) == ["e1:1", "e1:3"]
    assert [letter["batch_id"] for letter in listed(console, skillbook="beta")] == [beta]
    assert listed(console, batch=alpha, skillbook="beta") == []
    assert len(listed(console, since="1h")) == 3
    assert listed(console, since=(datetime.now(UTC) + timedelta(days=1)).isoformat()) == []


def test_a_letter_names_its_step_and_error(console: RunningConsole, failed: Failed) -> None:
    (letter,) = listed(console, batch=failed.beta.batch_id)
    assert letter["step"] == "Choosy"
    assert "sample s2 fails on purpose" in letter["error"]
    assert letter["skillbook"] == "beta"


def test_a_since_that_is_no_time_is_a_400_naming_it(console: RunningConsole) -> None:
    with console.client() as client:
        answer = client.get("/api/dead-letters", params={"since": "yesterday"})
    assert answer.status_code == 400
    assert answer.json()["message"].startswith("since: 'yesterday' is neither a duration")


def test_a_retry_sends_back_exactly_the_filtered_letters(
    console: RunningConsole, failed: Failed, fleet: Service, redis_client: redis.Redis
) -> None:
    redis_client.set(CHOOSY_HEALED, 1)
    with console.client(token=console.token) as client:
        answer = client.post("/api/dead-letters/retry", json={"batch": failed.alpha.batch_id})

    assert answer.status_code == 200, answer.text
    assert (answer.json()["sent"], answer.json()["kept"]) == (2, 0)
    assert [letter["batch_id"] for letter in listed(console)] == [failed.beta.batch_id]
    healed = all_done(failed.alpha, 3)
    assert (healed.failed, healed.retried) == (0, 2)


def test_a_retried_sample_leaves_the_failed_count_of_its_step(
    console: RunningConsole, failed: Failed, redis_client: redis.Redis
) -> None:
    redis_client.set(CHOOSY_HEALED, 1)
    with console.client(token=console.token) as client:
        client.post("/api/dead-letters/retry", json={"batch": failed.alpha.batch_id})
        all_done(failed.alpha, 3)
        steps = client.get(f"/api/batches/{failed.alpha.batch_id}").json()["steps"]
    assert [(step["done"], step["failed"]) for step in steps] == [(3, 0)] * len(steps)


def test_the_form_retry_redirects_to_the_filter_with_a_notice(
    console: RunningConsole, failed: Failed
) -> None:
    with console.client() as client:
        answer = post_form(client, "/dead-letters/retry", {"skillbook": "beta", "batch": "", "since": ""})
    assert answer.status_code == 303
    location = answer.headers["location"]
    assert location == "/dead-letters?skillbook=beta&notice=letters-sent"


def test_a_read_only_console_retries_nothing(failed: Failed, fleet: Service) -> None:
    with running_console(fleet, read_only=True) as console, console.client(token=console.token) as client:
        answer = client.post("/api/dead-letters/retry", json={})
        page = client.get("/dead-letters").text
    assert answer.status_code == 403
    assert len(read_dead_letters(fleet.runtime)) == 3
    assert 'id="retry-letters"' not in page


def test_the_retry_button_counts_its_letters_in_words(console: RunningConsole, failed: Failed) -> None:
    with console.client() as client:
        every = client.get("/dead-letters").text
        one = client.get("/dead-letters", params={"skillbook": "beta"}).text
    assert "Retry 3 letters" in every
    assert "Retry 1 letter<" in one  # the button's label ends there: no "letter(s)"
