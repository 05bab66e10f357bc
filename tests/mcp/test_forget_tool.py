"""MCP's ``ace.forget`` on the fleet back end: confirm required, role admin, the marker gone after."""

from __future__ import annotations

import uuid
from pathlib import Path

import anyio
import pytest
import redis

from ace_workers.mcp.forget_tool import ForgetResponse
from tests.support.mcp import call, fleet_env, http_client, make_key, refused
from tests.support.redis_scan import places_holding
from tests.support.workers import running_service

pytestmark = pytest.mark.slow


def test_forget_needs_confirm_and_admin_then_erases_the_subject(
    redis_url: str, redis_client: redis.Redis, tmp_path: Path
) -> None:
    marker = "m" + uuid.uuid4().hex
    trace = {
        "question": "Solve the flux puzzle. Input: kite",
        "answer": "no idea",
        "ground_truth": "kitekite",
        "feedback": "Incorrect.",
        "metadata": {"user_id": "u1", "note": marker},
    }
    with running_service(redis_url) as service:
        status = service.producer.enqueue_traces([trace], "shared").wait(timeout=60)
        assert status.done == 1
        env = fleet_env(service, redis_url, tmp_path)
        _, reviewer = make_key(env, role="review")
        selector = {"subject": "metadata.user_id=u1", "derived": "archive"}

        async def scenario() -> dict[str, object]:
            async with http_client(env) as client:
                unconfirmed = await refused(client, "ace.forget", selector)
                assert "confirm must be true" in str(unconfirmed)
                looked = await call(client, "ace.forget", {**selector, "dry_run": True})
                assert (looked["dry_run"], looked["samples"]) == (True, 1)
                assert places_holding(redis_client, marker) != []
                done = await call(client, "ace.forget", {**selector, "confirm": True})
                again = await call(client, "ace.forget", {**selector, "confirm": True})
                assert again["nothing_matched"] is True
            async with http_client(env, reviewer) as client:
                low = await refused(client, "ace.forget", {**selector, "confirm": True})
                assert low.data["kind"] == "forbidden"
            return done

        done = anyio.run(scenario)

    assert done["samples"] == 1
    assert done["derived"] == {"shared": ["flux-00001"]}
    assert done["derived_action"] == "archive"
    assert set(done["derived_versions"]) == {"shared"}  # archiving the skill made a version
    assert done["nothing_matched"] is False
    assert set(done) == set(ForgetResponse.model_fields)  # nothing else of the erasure record
    assert places_holding(redis_client, marker) == []
