"""A batch's state on the console: a failed batch never shows a green badge or a full bar; a running
batch is cancelled or resumed from its page (CSRF, roles through the operations, the audit log)."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
import redis

from ace_workers.console.audit import read_audit
from ace_workers.distributed.service import Service
from tests.support.batches import ledger_batch
from tests.support.console import RunningConsole, post_form, running_console


@pytest.fixture
def idle_console(idle_service: Service) -> Iterator[RunningConsole]:
    with running_console(idle_service) as running:
        yield running


@pytest.fixture
def prefix(idle_service: Service) -> str:
    return idle_service.runtime.settings.queue_prefix


def badge(page: str) -> tuple[str, str]:
    """The classes and the text of the state badge in the batch page's heading."""
    found = re.search(r'<h1>Batch .*?<span class="badge ([^"]*)">([^<]*)</span></h1>', page)
    assert found is not None, page[:500]
    return found.group(1).split()[-1], found.group(2)


def progress_bar(page: str) -> str:
    """The batch page's progress bar (the Progress card's <progress> element)."""
    found = re.search(r'<div class="dim">Progress</div>\s*<span class="progress">(<progress[^>]*>)', page)
    assert found is not None, page[:2000]
    return found.group(1)


@pytest.mark.parametrize(
    ("done", "failed", "colour", "text", "bar"),
    [
        (0, 4, "bad", "failed", 'class="bad" value="0" max="4"'),
        (3, 1, "warn", "done with failures", 'class="warn" value="3" max="4"'),
        (4, 0, "ok", "done", 'value="4" max="4"'),
    ],
)
def test_the_batch_page_colours_a_batch_by_how_its_samples_ended(
    idle_console: RunningConsole,
    redis_client: redis.Redis,
    prefix: str,
    done: int,
    failed: int,
    colour: str,
    text: str,
    bar: str,
) -> None:
    ledger_batch(redis_client, prefix, "b1", done=done, failed=failed)
    with idle_console.client() as client:
        page = client.get("/batches/b1").text
        answer = client.get("/api/batches/b1").json()
    assert badge(page) == (colour, text)
    assert bar in progress_bar(page)
    assert answer["status"]["state"] == text.replace(" ", "_")


def test_the_index_lists_a_failed_batch_among_the_recent_with_its_state(
    idle_console: RunningConsole, redis_client: redis.Redis, prefix: str
) -> None:
    ledger_batch(redis_client, prefix, "b1", failed=2)
    with idle_console.client() as client:
        (row,) = client.get("/api/batches").json()["recent"]
        page = client.get("/batches").text
    assert row["state"] == "failed"
    assert '<span class="badge state-failed bad">failed</span>' in page


def test_a_running_batch_page_offers_cancel_and_resume_a_finished_one_does_not(
    idle_console: RunningConsole, redis_client: redis.Redis, prefix: str
) -> None:
    ledger_batch(redis_client, prefix, "going", unfinished=2)
    ledger_batch(redis_client, prefix, "ended", done=2)
    with idle_console.client() as client:
        going = client.get("/batches/going").text
        ended = client.get("/batches/ended").text
    assert 'action="/batches/going/cancel"' in going
    assert 'action="/batches/going/resume"' in going
    assert 'id="batch-actions"' not in ended


def test_cancel_from_the_page_cancels_the_batch_and_is_audited(
    idle_console: RunningConsole, redis_client: redis.Redis, prefix: str
) -> None:
    batches = ledger_batch(redis_client, prefix, "going", done=1, unfinished=2)
    with idle_console.client() as client:
        answer = post_form(client, "/batches/going/cancel", {})
    assert answer.status_code == 303, answer.text
    assert answer.headers["location"] == "/batches/going?notice=batch-cancelled"
    assert batches.status("going").state.value == "cancelled"
    (entry,) = read_audit(redis_client, prefix)
    assert (entry.user, entry.action, entry.target, entry.outcome) == (
        idle_console.ops.name,
        "batch:cancel",
        "batch/going",
        "ok",
    )


def test_a_read_key_may_not_cancel_and_the_batch_runs_on(
    idle_console: RunningConsole, redis_client: redis.Redis, prefix: str
) -> None:
    batches = ledger_batch(redis_client, prefix, "going", unfinished=2)
    with idle_console.client(auth=idle_console.login(idle_console.keys.viewer)) as viewer:
        answer = post_form(viewer, "/batches/going/cancel", {})
    assert answer.status_code == 403
    assert "has role &#39;read&#39;" in answer.text
    assert batches.status("going").state.value == "running"
    (entry,) = read_audit(redis_client, prefix)
    assert entry.outcome.startswith("refused: ")


def test_cancel_and_resume_of_an_unknown_batch_are_404(idle_console: RunningConsole) -> None:
    with idle_console.client(token=idle_console.token) as client:
        for verb in ("cancel", "resume"):
            answer = client.post(f"/api/batches/nope/{verb}", json={})
            assert answer.status_code == 404, verb
            assert "no batch 'nope'" in answer.json()["message"]


def test_resume_of_a_finished_batch_sends_nothing(
    idle_console: RunningConsole, redis_client: redis.Redis, prefix: str
) -> None:
    ledger_batch(redis_client, prefix, "ended", failed=2)
    with idle_console.client(token=idle_console.token) as client:
        answer = client.post("/api/batches/ended/resume", json={})
    assert answer.status_code == 200, answer.text
    assert answer.json()["message"] == "batch ended is failed: nothing to resume"
    assert (answer.json()["sent"], answer.json()["redriven"]) == (0, 0)


def test_resume_of_a_half_stored_batch_is_a_conflict_naming_the_counts(
    idle_console: RunningConsole, redis_client: redis.Redis, idle_service: Service
) -> None:
    batches = idle_service.runtime.batches
    batches.create(
        "half", skillbook="book", recipe="trace_analyser", per_epoch=4, epochs=1, skills_at_start=0
    )
    batches.store_items("half", [{"trace": {"question": f"q{n}"}} for n in range(2)])
    with idle_console.client(token=idle_console.token) as client:
        answer = client.post("/api/batches/half/resume", json={})
    assert answer.status_code == 409
    assert "batch half stores 2 of its 4 inputs" in answer.json()["message"]
    assert batches.status("half").enqueued == 0
