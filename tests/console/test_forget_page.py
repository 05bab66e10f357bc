"""The console's forget page: a dry run first, then an erasure only with the confirmation, CSRF, audited."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
import redis

from ace_workers.console.audit import read_audit
from tests.support.console import RunningConsole, post_form, running_console
from tests.support.redis_scan import places_holding
from tests.support.workers import running_service

MARKER = "m" + uuid.uuid4().hex


@pytest.fixture
def console(redis_client: redis.Redis, redis_url: str) -> Iterator[RunningConsole]:
    """A fleet that learned from one trace of u1's (carrying MARKER), and its console."""
    trace = {
        "question": "Solve the flux puzzle. Input: kite",
        "answer": "no idea",
        "ground_truth": "kitekite",
        "feedback": "Incorrect.",
        "metadata": {"user_id": "u1", "note": MARKER},
    }
    with running_service(redis_url) as service:
        assert service.producer.enqueue_traces([trace], "support").wait(timeout=60).done == 1
        with running_console(service) as running:
            yield running


FIELDS = {"kind": "subject", "value": "metadata.user_id=u1", "derived": "archive"}


def test_the_page_shows_a_dry_run_and_erases_only_once_confirmed(
    console: RunningConsole, redis_client: redis.Redis
) -> None:
    with console.client() as client:
        preview = client.get("/forget", params=FIELDS)
        assert preview.status_code == 200, preview.text
        assert "1 samples match" in preview.text
        assert "learned only from these: flux-00001" in preview.text
        assert places_holding(redis_client, MARKER) != []  # the dry run erased nothing

        unconfirmed = post_form(client, "/forget/erase", FIELDS)
        assert unconfirmed.status_code == 400
        assert places_holding(redis_client, MARKER) != []

        done = post_form(client, "/forget/erase", {**FIELDS, "confirm": "yes"})
        assert done.status_code == 303
        assert done.headers["location"] == "/forget?notice=forgotten"
        shown = client.get("/forget?notice=forgotten").text
    assert places_holding(redis_client, MARKER) == []
    assert "Erased: the matched traces are gone" in shown
    assert "subject metadata.user_id=u1" in shown
    prefix = console.app.state.console.prefix
    actions = [(entry.action, entry.outcome) for entry in read_audit(redis_client, prefix)]
    assert actions[:2] == [
        ("forget:erase", "ok"),
        (
            "forget:erase",
            "refused: confirm: erasing needs confirm=yes (review the dry run first); nothing erased",
        ),
    ]


def test_without_the_csrf_token_or_below_admin_nothing_is_erased(
    console: RunningConsole, redis_client: redis.Redis
) -> None:
    with console.client() as client:
        forged = client.post("/forget/erase", data={**FIELDS, "confirm": "yes"}, follow_redirects=False)
    assert forged.status_code == 403
    with console.client(auth=console.login(console.keys.viewer)) as viewer:
        refused = post_form(viewer, "/forget/erase", {**FIELDS, "confirm": "yes"})
        page = viewer.get("/forget")
    assert refused.status_code == 403
    assert page.status_code == 403
    assert places_holding(redis_client, MARKER) != []
