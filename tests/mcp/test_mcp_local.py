"""``ace-workers mcp`` on the in-process back end, through the SDK's client over stdio and HTTP."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import pytest

from ace_workers.mcp import TOOLS
from tests.support.mcp import (
    CLIENTS,
    call,
    exercise_every_tool,
    http_client,
    refused,
    samples,
    server_env,
    stdio_client,
)

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("transport", sorted(CLIENTS))
def test_every_tool_answers_on_the_local_back_end(transport: str, tmp_path: Path) -> None:
    async def scenario() -> None:
        async with CLIENTS[transport](server_env(tmp_path, ACE_MCP_BACKEND="local")) as client:
            await exercise_every_tool(client, tmp_path, shared=False)

    anyio.run(scenario)


def test_bad_input_of_every_tool_is_an_mcp_error_naming_the_problem(tmp_path: Path) -> None:
    outside = tmp_path.parent / f"{tmp_path.name}-secret.json"
    outside.write_text('{"skills": {}}')
    (tmp_path / "broken.json").write_text('{"skills": \n[}')
    env = server_env(tmp_path, ACE_MCP_MAX_TEXT_CHARS="200", ACE_MCP_MAX_SAMPLES="3")

    async def scenario() -> None:
        # Over HTTP, served in this process: what is refused does not depend on the transport.
        async with http_client(env) as client:
            error = await refused(client, "ace.ask", {"session_id": "s", "question": "x" * 201})
            assert error.code == -32602
            assert "question: 201 characters, at most 200" in error.message
            assert error.data == {"kind": "invalid_request", "tool": "ace.ask"}

            error = await refused(client, "ace.ask", {"session_id": "s", "question": "hi", "mood": "curious"})
            assert "mood: Extra inputs are not permitted" in error.message

            error = await refused(client, "ace.learn.sample", {"session_id": "s", "samples": samples(4, 1)})
            assert "4 given, at most 3" in error.message

            error = await refused(
                client, "ace.learn.feedback", {"session_id": "never-seen", "feedback": "no"}
            )
            assert (error.code, error.data["kind"]) == (-32001, "unknown_session")
            assert "'never-seen' does not exist or expired" in error.message

            await call(client, "ace.skillbook.get", {"session_id": "quiet"})
            error = await refused(client, "ace.learn.feedback", {"session_id": "quiet", "feedback": "no"})
            assert "has asked nothing yet" in error.message

            error = await refused(client, "ace.skillbook.get", {"session_id": "s", "limit": 0})
            assert "limit: Input should be greater than or equal to 1" in error.message

            for path in (f"../{outside.name}", str(outside), "notes.txt"):
                error = await refused(client, "ace.skillbook.save", {"session_id": "s", "path": path})
                assert (error.code, error.data["kind"]) == (-32003, "path_not_allowed"), path
            assert outside.read_text() == '{"skills": {}}'  # not overwritten
            assert not (tmp_path / "notes.txt").exists()

            error = await refused(
                client, "ace.skillbook.load", {"session_id": "s", "path": f"../{outside.name}"}
            )
            assert "outside the skillbook directory" in error.message

            error = await refused(client, "ace.skillbook.load", {"session_id": "s", "path": "broken.json"})
            assert error.code == -32602
            assert "broken.json: not valid JSON at line 2" in error.message

            error = await refused(client, "ace.skillbook.load", {"session_id": "s", "path": "missing.json"})
            assert "no skillbook file 'missing.json'" in error.message

            error = await refused(client, "ace.nothing", {"session_id": "s"})
            assert "unknown tool 'ace.nothing'" in error.message

    anyio.run(scenario)


def test_a_read_only_server_refuses_every_tool_that_writes_but_answers(tmp_path: Path) -> None:
    env = server_env(tmp_path)
    existing = tmp_path / "team.json"
    existing.write_text('{"skills": {"s1": {"content": "kept"}}}')

    async def scenario() -> None:
        async with stdio_client(env, "--read-only") as client:
            await call(client, "ace.ask", {"session_id": "s", "question": "What is 2+2?"})
            await call(client, "ace.skillbook.get", {"session_id": "s"})
            refusals = {
                "ace.learn.sample": {"session_id": "s", "samples": samples(1, 1)},
                "ace.learn.feedback": {"session_id": "s", "feedback": "wrong"},
                "ace.skillbook.save": {"session_id": "s", "path": "team.json"},
                "ace.skillbook.load": {"session_id": "s", "path": "team.json"},
            }
            for tool, arguments in refusals.items():
                error = await refused(client, tool, arguments)
                assert (error.code, error.data["kind"]) == (-32002, "read_only"), tool
                assert f"{tool} writes" in error.message
                assert "read-only" in error.message

    anyio.run(scenario)
    # The finding: save overwrote an existing skillbook with an empty one.
    assert existing.read_text() == '{"skills": {"s1": {"content": "kept"}}}'


def test_a_session_unused_past_its_ttl_is_forgotten(tmp_path: Path) -> None:
    env = server_env(tmp_path, ACE_MCP_SESSION_TTL_SECONDS="1")

    async def scenario() -> None:
        async with stdio_client(env) as client:
            await call(client, "ace.ask", {"session_id": "s", "question": "What is 2+2?"})
            learned = await call(client, "ace.learn.feedback", {"session_id": "s", "feedback": "say 4"})
            assert learned["learned"] is True
            # The behaviour under test: the TTL passes with the session unused (a call would use it).
            time.sleep(1.2)
            error = await refused(client, "ace.learn.feedback", {"session_id": "s", "feedback": "say 4"})
            assert error.data["kind"] == "unknown_session"

    anyio.run(scenario)


def test_the_tools_table_names_the_tools_of_the_design() -> None:
    assert list(TOOLS) == [
        "ace.ask",
        "ace.learn.sample",
        "ace.learn.feedback",
        "ace.skillbook.get",
        "ace.skillbook.list",
        "ace.skillbook.save",
        "ace.skillbook.load",
        "ace.review.list",
        "ace.review.approve",
        "ace.review.reject",
        "ace.label.set",
        "ace.skill.change",
        "ace.forget",
    ]
