"""Reaching ``ace-workers mcp`` with the SDK's own client (over stdio or streamable HTTP), and one walk
through all six tools, shared by every transport and back end.

Over HTTP the server authenticates the fleet's API keys: :func:`http_client` makes a fleet-wide
admin key in the fleet's Redis and connects with it, or, on the local back end (no fleet, no
keys), serves ``--no-auth`` on loopback as the local operator.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ace_workers.distributed.tenancy.api_keys import ALL_TENANTS, ApiKey, ApiKeys
from ace_workers.mcp import TOOLS
from ace_workers.sim.tasks import make_tasks

from .fixtures import connect_test_redis
from .processes import terminate
from .servers import free_port
from .waiting import wait_for

if TYPE_CHECKING:  # the SDK loads when a test connects: over a second of CPU, spared to the
    # pytest workers that only collect these tests
    from mcp import Client
    from mcp.shared.exceptions import MCPError

    from ace_workers.distributed.service import Service

ACE_WORKERS = str(Path(sys.executable).with_name("ace-workers"))
# A raw JSON-RPC initialize request, for tests that speak the protocol without the SDK's client.
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "probe", "version": "1"},
    },
}


def server_env(skillbook_dir: Path, **settings: str) -> dict[str, str]:
    """This process's environment less its ACE_* settings, plus the server's own."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("ACE_")}
    env["ACE_MCP_SKILLBOOK_DIR"] = str(skillbook_dir)
    env.update(settings)
    return env


def make_key(env: Mapping[str, str], tenant: str = ALL_TENANTS, role: str = "admin") -> tuple[ApiKey, str]:
    """A new API key in the Redis of ``env``'s fleet (``*``, admin: an operator's); the key and its
    secret. The key's principal, what the change log records, is ``key:<id>``."""
    client = connect_test_redis(env["ACE_REDIS_URL"])
    try:
        keys = ApiKeys(client, prefix=env.get("ACE_QUEUE_PREFIX", "ace"))
        return keys.create(tenant, role, note="tests", actor="user:tests")
    finally:
        client.close()


def fleet_env(service: Service, redis_url: str, skillbook_dir: Path, **settings: str) -> dict[str, str]:
    """:func:`server_env` for a fleet back end on ``service``'s Redis and queues, skillbook "shared"."""
    return server_env(
        skillbook_dir,
        ACE_REDIS_URL=redis_url,
        ACE_QUEUE_PREFIX=service.runtime.settings.queue_prefix,
        ACE_MCP_SKILLBOOK="shared",
        **settings,
    )


@asynccontextmanager
async def stdio_client(env: Mapping[str, str], *args: str) -> AsyncIterator[Client]:
    """The SDK's client on a server it starts as a subprocess and talks to over stdin/stdout."""
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=ACE_WORKERS, args=["mcp", *args], env=dict(env))
    async with Client(params, read_timeout_seconds=60) as client:
        yield client


@asynccontextmanager
async def http_client(env: Mapping[str, str], token: str | None = None) -> AsyncIterator[Client]:
    """The SDK's client on the HTTP server of ``env``'s settings (in this process).

    On a fleet (``ACE_REDIS_URL``) it sends ``token``, else a new fleet-wide admin key's; on the
    local back end the server runs ``--no-auth`` on loopback and the client sends nothing.
    """
    from ace_workers.mcp import MCPServerConfig

    fleet = MCPServerConfig.from_env(env).chosen_backend(env.get("ACE_REDIS_URL")) == "fleet"
    if fleet and token is None:
        _, token = make_key(env)
    with http_server_in_process(env, no_auth=not fleet) as url:
        async with connect_http(url, token) as client:
            yield client


@contextmanager
def http_server(env: Mapping[str, str], *args: str, host: str = "127.0.0.1") -> Iterator[str]:
    """``ace-workers mcp --transport http`` on a free port of ``host``; yields its URL."""
    port = free_port()
    command = [ACE_WORKERS, "mcp", "--transport", "http", "--host", host, "--port", str(port), *args]
    process = subprocess.Popen(command, env=dict(env), stderr=subprocess.PIPE)
    try:
        _wait_for_port(host, port, process)
        yield f"http://{host}:{port}/mcp"
    finally:
        terminate(process)
        assert process.stderr is not None
        process.stderr.close()


@contextmanager
def http_server_in_process(
    env: Mapping[str, str], *, host: str = "127.0.0.1", no_auth: bool = False
) -> Iterator[str]:
    """The server ``ace-workers mcp --transport http`` runs, in a thread of this process; yields its URL.

    Built from ``env``'s settings as ace_workers/cli/mcp.py builds it. The command itself is
    tested by the tests that use :func:`http_server`; this spares the others a process whose
    imports alone take over a second of CPU.
    """
    from ace_workers.distributed.settings import WorkerSettings
    from ace_workers.mcp import MCPServerConfig, create_handlers
    from ace_workers.mcp import server as mcp_server

    config = MCPServerConfig.from_env(env)
    handlers = create_handlers(config, WorkerSettings.from_env(env))
    port = free_port()
    try:
        server = mcp_server.http_server(handlers, mcp_server.HTTPOptions(host, port, no_auth))
    except BaseException:
        handlers.close()
        raise
    thread = threading.Thread(target=server.run, name=f"mcp-http-{port}", daemon=True)
    thread.start()
    try:
        wait_for(lambda: server.started or not thread.is_alive(), 30, f"the MCP server on port {port}")
        assert server.started, f"the MCP server on port {port} did not start (its log is above)"
        yield f"http://{host}:{port}/mcp"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        handlers.close()
        assert not thread.is_alive(), f"the MCP server on port {port} did not stop within 30 s"


@asynccontextmanager
async def connect_http(url: str, token: str | None) -> AsyncIterator[Client]:
    """The SDK's client on ``url``, sending ``token`` as its bearer token (None: no header)."""
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    headers = {"Authorization": f"Bearer {token}"} if token is not None else None
    async with (
        create_mcp_http_client(headers=headers) as http,
        Client(streamable_http_client(url, http_client=http), read_timeout_seconds=60) as client,
    ):
        yield client


def _wait_for_port(host: str, port: int, process: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    def listening() -> bool:
        if process.poll() is not None:
            assert process.stderr is not None
            raise AssertionError(
                f"the MCP server exited {process.returncode}: {process.stderr.read().decode()}"
            )
        try:
            with socket.create_connection((host, port), timeout=0.2):
                return True
        except OSError:
            return False

    wait_for(listening, timeout, f"the MCP server to listen on port {port}", every=0.1)


CLIENTS = {"stdio": stdio_client, "http": http_client}


async def call(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The tool's structured result; fails the test when the call errs."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


async def refused(client: Client, tool: str, arguments: dict[str, Any]) -> MCPError:
    """The MCP error the call raised; fails the test when it succeeds."""
    from mcp.shared.exceptions import MCPError

    with pytest.raises(MCPError) as info:
        await client.call_tool(tool, arguments)
    return info.value


# -- one walk through every tool ---------------------------------------------------------------


def samples(n: int, seed: int) -> list[dict[str, Any]]:
    return [
        {"question": s.question, "ground_truth": s.ground_truth} for s in make_tasks(n, seed=seed, topics=1)
    ]


async def exercise_every_tool(
    client: Client, skillbook_dir: Path, *, shared: bool, settle: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """Learn, ask, give feedback, read, save and load; ``shared``: sessions see one skillbook (fleet).

    ``settle`` waits for a queued batch by id (fleet), so later reads see what it learned.
    """
    listed = await client.list_tools()
    assert {tool.name for tool in listed.tools} == set(TOOLS)
    ask_schema = next(tool for tool in listed.tools if tool.name == "ace.ask").input_schema
    assert set(ask_schema["required"]) == {"session_id", "question"}

    learned = await call(client, "ace.learn.sample", {"session_id": "alice", "samples": samples(4, seed=3)})
    assert (learned["processed"], learned["failed"], learned["queued"]) == (4, 0, 4)
    assert learned["skill_count_after"] > learned["skill_count_before"]

    task = make_tasks(1, seed=41, topics=1)[0]
    asked = await call(client, "ace.ask", {"session_id": "alice", "question": task.question})
    assert asked["skill_count"] == learned["skill_count_after"]
    assert asked["answer"]

    feedback = await call(
        client,
        "ace.learn.feedback",
        {"session_id": "alice", "feedback": "that was wrong", "ground_truth": "not " + asked["answer"]},
    )
    if shared:
        assert (feedback["learned"], feedback["queued"]) == (False, True)
        assert settle is not None
        assert feedback["batch_id"]
        settle(feedback["batch_id"])
    else:
        assert (feedback["learned"], feedback["queued"]) == (True, False)

    got = await call(client, "ace.skillbook.get", {"session_id": "alice", "limit": 100})
    assert got["stats"]["skills"] == len(got["skills"]) >= learned["skill_count_after"]
    assert all(skill["content"] for skill in got["skills"])

    saved = await call(client, "ace.skillbook.save", {"session_id": "alice", "path": "team.json"})
    written = json.loads((skillbook_dir / "team.json").read_text())
    assert saved["saved_skill_count"] == len(written["skills"]) >= learned["skill_count_after"]

    fresh = await call(client, "ace.skillbook.get", {"session_id": "bob"})
    assert fresh["stats"]["skills"] == (got["stats"]["skills"] if shared else 0)

    loaded = await call(client, "ace.skillbook.load", {"session_id": "bob", "path": "team.json"})
    assert loaded["skill_count"] == saved["saved_skill_count"]
    after_load = await call(client, "ace.skillbook.get", {"session_id": "bob", "limit": 100})
    assert {s["content"] for s in after_load["skills"]} == {s["content"] for s in got["skills"]}
    return {"learned": learned, "feedback": feedback, "got": got, "loaded": loaded}
