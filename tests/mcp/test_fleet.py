"""``ace-workers mcp`` on the fleet back end: the SDK's client, real workers, the Redis skillbook."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from ace_workers.distributed.service import Service
from ace_workers.distributed.store.batches import BatchState
from tests.support.mcp import CLIENTS, call, exercise_every_tool, fleet_env, refused
from tests.support.waiting import wait_for
from tests.support.workers import running_service

pytestmark = pytest.mark.slow


def settle_batches(service: Service, timeout: float = 60.0) -> Callable[[str], None]:
    def settle(batch_id: str) -> None:
        wait_for(
            lambda: service.runtime.batches.status(batch_id).state is not BatchState.RUNNING,
            timeout,
            f"batch {batch_id} to stop running",
            every=0.05,
        )

    return settle


@pytest.mark.parametrize("transport", sorted(CLIENTS))
def test_every_tool_answers_on_the_fleet_and_sessions_share_one_skillbook(
    transport: str, redis_url: str, tmp_path: Path
) -> None:
    with running_service(redis_url) as service:
        env = fleet_env(service, redis_url, tmp_path)

        settle = settle_batches(service)

        async def scenario() -> dict[str, Any]:
            async with CLIENTS[transport](env) as client:
                return await exercise_every_tool(client, tmp_path, shared=True, settle=settle)

        seen = anyio.run(scenario)
        store = service.runtime.store("shared")
        # What the tools reported is what the workers wrote to the versioned skillbook in Redis.
        assert seen["learned"]["skill_count_after"] <= seen["got"]["stats"]["skills"]
        assert seen["loaded"]["version"] == store.version()
        assert store.active_skills() == seen["loaded"]["skill_count"]
        feedback_batch = service.runtime.batches.status(seen["feedback"]["batch_id"])
        assert (feedback_batch.done, feedback_batch.failed) == (1, 0)


def test_a_read_only_fleet_server_reads_the_shared_skillbook_but_changes_nothing(
    redis_url: str, tmp_path: Path
) -> None:
    with running_service(redis_url) as service:
        store = service.runtime.store("shared")
        env = fleet_env(service, redis_url, tmp_path, ACE_MCP_READ_ONLY="true")

        async def scenario() -> None:
            async with CLIENTS["http"](env) as client:  # in this process: one server process less
                got = await call(client, "ace.skillbook.get", {"session_id": "s"})
                assert (got["skillbook"], got["version"]) == ("shared", store.version())
                await call(client, "ace.ask", {"session_id": "s", "question": "What is 2+2?"})
                error = await refused(client, "ace.learn.feedback", {"session_id": "s", "feedback": "no"})
                assert error.data["kind"] == "read_only"

        version = store.version()
        anyio.run(scenario)
        assert store.version() == version
        assert service.runtime.batches.running() == []  # nothing was sent to learn
