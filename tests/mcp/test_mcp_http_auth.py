"""``ace-workers mcp --transport http`` lets in only who holds an API key, by the host it binds, boundedly."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
import redis

from tests.support.cli import run_console_script
from tests.support.mcp import (
    INITIALIZE,
    call,
    connect_http,
    http_server,
    http_server_in_process,
    make_key,
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
        ((), {}, "the local back end has no fleet: set ACE_REDIS_URL"),
        (("--no-auth", "--host", "0.0.0.0"), {}, "--no-auth is allowed on a loopback host only"),
        ((), {"ACE_MCP_TOKEN": "an-old-shared-token-0123"}, "ACE_MCP_TOKEN is retired"),
    ],
    ids=["local-back-end-without-no-auth", "no-auth-on-a-public-host", "retired-token-setting"],
)
def test_the_http_server_refuses_to_start_where_it_could_not_authenticate_keys(
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
    assert "ace-workers key create '*' --role admin" in ran.err  # what to do instead
    assert len(ran.err.strip().splitlines()) == 1
    assert "an-old-shared-token" not in ran.err


def test_a_request_without_a_live_key_gets_401(
    redis_client: redis.Redis, redis_url: str, tmp_path: Path
) -> None:
    env = server_env(tmp_path, ACE_REDIS_URL=redis_url)  # redis_client: a flushed database
    with http_server(env) as url:  # the command itself, on the fleet back end
        # Made once the server runs: it marks the new fleet's schema first, as an operator's would.
        _, secret = make_key(env)
        assert initialize(url).status_code == 401
        assert initialize(url, **bearer("ace_0123abcd_" + "x" * 43)).status_code == 401  # no such key
        assert initialize(url, **bearer("not-a-key-at-all")).status_code == 401
        assert initialize(url, Authorization=secret).status_code == 401  # not a bearer token
        assert initialize(url, **bearer(secret)).status_code == 200


def test_no_auth_on_a_loopback_host_serves_without_a_key(tmp_path: Path) -> None:
    async def scenario() -> dict[str, Any]:
        with http_server_in_process(server_env(tmp_path), no_auth=True) as url:
            async with connect_http(url, None) as client:
                return await call(client, "ace.skillbook.get", {"session_id": "s"})

    assert anyio.run(scenario)["stats"]["skills"] == 0


def test_the_host_and_origin_check_applies_to_the_host_it_binds(tmp_path: Path) -> None:
    with http_server_in_process(server_env(tmp_path), host="127.0.0.2", no_auth=True) as url:
        authority = url.removeprefix("http://").removesuffix("/mcp")
        assert initialize(url, Host="evil.example").status_code == 421
        assert initialize(url, Host=authority, Origin="http://evil.example").status_code == 403
        assert initialize(url, Host=authority, Origin=f"http://{authority}").status_code == 200


def test_a_session_opened_by_one_connection_is_refused_to_another(tmp_path: Path) -> None:
    async def scenario() -> None:
        with http_server_in_process(server_env(tmp_path), no_auth=True) as url:
            async with connect_http(url, None) as alice, connect_http(url, None) as mallory:
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
                feedback = {"session_id": "alice", "feedback": "say 4"}
                learned = await call(alice, "ace.learn.feedback", feedback)
                assert learned["learned"] is True

    anyio.run(scenario)


def test_open_connections_are_capped_and_an_idle_one_expires(tmp_path: Path) -> None:
    # Five seconds: the three first requests must all fall within it, also on a loaded machine.
    env = server_env(tmp_path, ACE_MCP_MAX_CONNECTIONS="2", ACE_MCP_SESSION_TTL_SECONDS="5")
    with http_server_in_process(env, no_auth=True) as url:
        opened = [initialize(url) for _ in range(2)]
        assert [response.status_code for response in opened] == [200, 200]
        refused_response = initialize(url)
        assert refused_response.status_code == 503
        assert "at most 2 (ACE_MCP_MAX_CONNECTIONS)" in refused_response.json()["error"]["message"]
        # Unused for five seconds, the two connections are closed and a new one is let in.
        wait_for(
            lambda: initialize(url).status_code == 200,
            timeout=30,
            what="an idle connection to expire",
            every=0.5,
        )
