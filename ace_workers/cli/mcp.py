"""``ace-workers mcp``: serve ACE to MCP clients over stdio or streamable HTTP."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

__all__ = ["mcp_command"]


def mcp_command(
    transport: Annotated[
        str,
        typer.Option(help="stdio (for assistants that start the server) or http (streamable HTTP at /mcp)."),
    ] = "stdio",
    host: Annotated[str, typer.Option(help="HTTP: the address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="HTTP: the port to listen on.")] = 8765,
    backend: Annotated[
        str | None,
        typer.Option(help="local, fleet or auto (fleet when ACE_REDIS_URL is set) [ACE_MCP_BACKEND]."),
    ] = None,
    skillbook_dir: Annotated[
        Path | None, typer.Option(help="The only directory save/load may use [ACE_MCP_SKILLBOOK_DIR].")
    ] = None,
    read_only: Annotated[
        bool | None,
        typer.Option(
            "--read-only", help="Refuse every tool that writes: learn, save, load [ACE_MCP_READ_ONLY]."
        ),
    ] = None,
    no_auth: Annotated[
        bool,
        typer.Option(
            "--no-auth", help="HTTP: serve without API keys, as the local operator (a loopback --host only)."
        ),
    ] = False,
) -> None:
    """Serve ACE to MCP clients: ace.ask, ace.learn.*, ace.skillbook.* (needs the 'mcp' extra).

    Over HTTP every request carries one of the fleet's API keys as its bearer token
    (ace-workers key create) and acts with the key's tenant and role: HTTP needs the fleet back
    end, unless --no-auth on a loopback host. Over stdio the one peer is the local operator.
    """
    import dataclasses

    from ..distributed.settings import WorkerSettings
    from ..mcp import MCPServerConfig, create_handlers, serve
    from ..mcp.auth import check_http_access
    from ..mcp.server import HTTPOptions

    if transport not in ("stdio", "http"):
        raise typer.BadParameter(f"{transport!r}: use stdio or http", param_hint="--transport")
    overrides: dict[str, Any] = {"backend": backend, "read_only": read_only}
    overrides["skillbook_dir"] = str(skillbook_dir) if skillbook_dir else None
    config = dataclasses.replace(
        MCPServerConfig.from_env(), **{name: value for name, value in overrides.items() if value is not None}
    )
    settings = WorkerSettings.from_env()
    if transport == "http":
        # Refused before anything is built: the one line is the whole story.
        fleet = config.chosen_backend(settings.redis_url) == "fleet"
        check_http_access(no_auth=no_auth, host=host, fleet=fleet)
    handlers = create_handlers(config, settings)
    if transport == "http":
        auth = "no authentication" if no_auth else "API keys required"
        typer.echo(
            f"MCP server on http://{host}:{port}/mcp ({handlers.backend.name} back end, {auth})", err=True
        )
    serve(handlers, transport=transport, http=HTTPOptions(host, port, no_auth))
