"""Reaching ``ace-workers mcp`` with the SDK's own client: over stdio, or over streamable HTTP."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

ACE_WORKERS = str(Path(sys.executable).with_name("ace-workers"))


def server_env(skillbook_dir: Path, **settings: str) -> dict[str, str]:
    """This process's environment less its ACE_* settings, plus the server's own."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("ACE_")}
    env["ACE_MCP_SKILLBOOK_DIR"] = str(skillbook_dir)
    env.update(settings)
    return env


@asynccontextmanager
async def stdio_client(env: Mapping[str, str], *args: str) -> AsyncIterator[Client]:
    """The SDK's client on a server it starts as a subprocess and talks to over stdin/stdout."""
    params = StdioServerParameters(command=ACE_WORKERS, args=["mcp", *args], env=dict(env))
    async with Client(params, read_timeout_seconds=60) as client:
        yield client


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@asynccontextmanager
async def http_client(env: Mapping[str, str], *args: str) -> AsyncIterator[Client]:
    """The SDK's client on a server started with ``--transport http`` on a free local port."""
    port = free_port()
    command = [ACE_WORKERS, "mcp", "--transport", "http", "--port", str(port), *args]
    process = subprocess.Popen(command, env=dict(env), stderr=subprocess.PIPE)
    try:
        _wait_for_port(port, process)
        async with Client(f"http://127.0.0.1:{port}/mcp", read_timeout_seconds=60) as client:
            yield client
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        assert process.stderr is not None
        process.stderr.close()


def _wait_for_port(port: int, process: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            assert process.stderr is not None
            raise AssertionError(
                f"the MCP server exited {process.returncode}: {process.stderr.read().decode()}"
            )
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"the MCP server did not listen on port {port} within {timeout} s")


CLIENTS = {"stdio": stdio_client, "http": http_client}


async def call(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The tool's structured result; fails the test when the call errs."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


async def refused(client: Client, tool: str, arguments: dict[str, Any]) -> MCPError:
    """The MCP error the call raised; fails the test when it succeeds."""
    with pytest.raises(MCPError) as info:
        await client.call_tool(tool, arguments)
    return info.value
