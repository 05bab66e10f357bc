"""``ace-workers mcp --transport http`` lets in only who holds the token, by the host it binds, boundedly."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from tests.support.cli import run_console_script
from tests.support.mcp import (
    INITIALIZE,
    TOKEN,
    call,
    connect_http,
    http_server,
    http_server_in_process,
    refused,
    server_env,
)
from tests.support.servers import free_port
from tests.support.waiting import wait_for

pytestmark = pytest.mark.slow

JSON_ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def initialize(url: str, **headers: str) -> httpx.Response:
    """One raw initialize POST: what opens an HTTP connection of the server."""
    return httpx.post(url, json=INITIALIZE, headers={**JSON_ACCEPT, **headers}, timeout=30)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.mark.parametrize(
    ("args", "settings", "says"),
    [
        ((), {}, "needs a bearer token"),
        (("--no-auth", "--host", "0.0.0.0"), {}, "--no-auth is allowed on a loopback host only"),
        ((), {"ACE_MCP_TOKEN": "short"}, "at least 16 are needed"),
        (("--token-file", "/nonexistent/token"), {}, "--token-file /nonexistent/token: cannot read it"),
    ],
    ids=["no-token", "no-auth-on-a-public-host", "short-token", "missing-token-file"],
)
def test_the_http_server_refuses_to_start_without_a_usable_token(
    args: tuple[str, ...],
    settings: dict[str, str],
    says: str,
    tmp_path: Path,
    clean_env: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Through main(), as the console script runs it, in this process: the refusal comes before
    # the server is built, so a server process of its own would only add a second of imports.
    clean_env.setenv("ACE_MCP_SKILLBOOK_DIR", str(tmp_path))
    for name, value in settings.items():
        clean_env.setenv(name, value)
    command = ["mcp", "--transport", "http", "--port", str(free_port()), *args]
    ran = run_console_script(clean_env, capsys, *command)
    assert ran.code == 2  # a usage error: a setting missing or wrong
    assert says in ran.err
    assert len(ran.err.strip().splitlines()) == 1


@pytest.fixture(scope="module")
def token_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One server on the default settings (a token), for the tests that change none of them.

    They share a worker (tests/support/scheduling.py), so the server starts once.
    """
    with http_server(server_env(tmp_path_factory.mktemp("skillbooks"))) as url:
        yield url


def test_a_request_without_the_token_or_with_a_wrong_one_gets_401(token_server: str) -> None:
    url = token_server
    assert initialize(url).status_code == 401
    assert initialize(url, **bearer("wrong-" + TOKEN)).status_code == 401
    assert initialize(url, Authorization=TOKEN).status_code == 401  # not a bearer token
    assert initialize(url, **bearer(TOKEN)).status_code == 200


def test_the_token_can_come_from_a_file(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("from-a-file-" + "y" * 16 + "\n")
    env = {name: value for name, value in server_env(tmp_path).items() if name != "ACE_MCP_TOKEN"}
    with http_server(env, "--token-file", str(token_file)) as url:
        assert initialize(url, **bearer(TOKEN)).status_code == 401
        assert initialize(url, **bearer("from-a-file-" + "y" * 16)).status_code == 200


def test_no_auth_on_a_loopback_host_serves_without_a_token(tmp_path: Path) -> None:
    env = {name: value for name, value in server_env(tmp_path).items() if name != "ACE_MCP_TOKEN"}

    async def scenario() -> dict[str, Any]:
        with http_server_in_process(env, no_auth=True) as url:
            async with connect_http(url, None) as client:
                return await call(client, "ace.skillbook.get", {"session_id": "s"})

    assert anyio.run(scenario)["stats"]["skills"] == 0


def test_the_host_and_origin_check_applies_to_the_host_it_binds(tmp_path: Path) -> None:
    with http_server_in_process(server_env(tmp_path), host="127.0.0.2") as url:
        authority = url.removeprefix("http://").removesuffix("/mcp")
        assert initialize(url, **bearer(TOKEN), Host="evil.example").status_code == 421
        assert (
            initialize(url, **bearer(TOKEN), Host=authority, Origin="http://evil.example").status_code == 403
        )
        assert (
            initialize(url, **bearer(TOKEN), Host=authority, Origin=f"http://{authority}").status_code == 200
        )


def test_a_session_opened_by_one_connection_is_refused_to_another(token_server: str) -> None:
    url = token_server

    async def scenario() -> None:
        async with connect_http(url, TOKEN) as alice, connect_http(url, TOKEN) as mallory:
            await call(alice, "ace.ask", {"session_id": "alice", "question": "What is 2+2?"})
            for tool, arguments in {
                "ace.skillbook.get": {"session_id": "alice"},
                "ace.learn.feedback": {"session_id": "alice", "feedback": "say 5"},
                "ace.skillbook.load": {"session_id": "alice", "path": "planted.json"},
            }.items():
                error = await refused(mallory, tool, arguments)
                assert error.data["kind"] == "session_not_yours", tool
                assert "'alice' belongs to another connection" in error.message
            # alice's session is still hers, untouched.
            learned = await call(alice, "ace.learn.feedback", {"session_id": "alice", "feedback": "say 4"})
            assert learned["learned"] is True

    anyio.run(scenario)


def test_open_connections_are_capped_and_an_idle_one_expires(tmp_path: Path) -> None:
    # Five seconds: the three first requests must all fall within it, also on a loaded machine.
    env = server_env(tmp_path, ACE_MCP_MAX_CONNECTIONS="2", ACE_MCP_SESSION_TTL_SECONDS="5")
    with http_server_in_process(env) as url:
        opened = [initialize(url, **bearer(TOKEN)) for _ in range(2)]
        assert [response.status_code for response in opened] == [200, 200]
        refused_response = initialize(url, **bearer(TOKEN))
        assert refused_response.status_code == 503
        assert "at most 2 (ACE_MCP_MAX_CONNECTIONS)" in refused_response.json()["error"]["message"]
        # Unused for five seconds, the two connections are closed and a new one is let in.
        wait_for(
            lambda: initialize(url, **bearer(TOKEN)).status_code == 200,
            timeout=30,
            what="an idle connection to expire",
            every=0.5,
        )
