"""The ``ace-workers`` command line."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from . import __version__
from .errors import AceError

app = typer.Typer(
    help="Agentic Context Engineering on distributed Celery workers.",
    no_args_is_help=True,
    add_completion=False,
)


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"ace-workers {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_print_version, is_eager=True, help="Print the version and exit."),
    ] = False,
) -> None:
    """Agentic Context Engineering on distributed Celery workers."""


@app.command("version")
def version_command() -> None:
    """Print the version."""
    typer.echo(f"ace-workers {__version__}")


@app.command("demo")
def demo_command(
    samples: Annotated[int, typer.Option(min=1, help="Synthetic tasks per epoch.")] = 30,
    topics: Annotated[int, typer.Option(min=1, max=8, help="Topics (hidden rules) the tasks cover.")] = 5,
    epochs: Annotated[int, typer.Option(min=1, help="Passes over the tasks.")] = 3,
    seed: Annotated[int, typer.Option(help="Seed of the tasks and the simulated LLM.")] = 7,
    save: Annotated[Path | None, typer.Option(help="Write the learned skillbook to this JSON file.")] = None,
) -> None:
    """Run ACE with the simulated LLM and show the accuracy rising as skills are learned."""
    from .demo import run_demo

    report = run_demo(samples=samples, topics=topics, epochs=epochs, seed=seed, save=save)
    if report.failed_samples:
        raise typer.Exit(code=1)


@app.command("mcp")
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
        bool | None, typer.Option("--read-only", help="Refuse learning and loading [ACE_MCP_READ_ONLY].")
    ] = None,
) -> None:
    """Serve ACE to MCP clients: ace.ask, ace.learn.*, ace.skillbook.* (needs the 'mcp' extra)."""
    import dataclasses

    from .distributed.settings import WorkerSettings
    from .mcp import MCPServerConfig, create_handlers, serve

    if transport not in ("stdio", "http"):
        raise typer.BadParameter(f"{transport!r}: use stdio or http", param_hint="--transport")
    overrides: dict[str, Any] = {"backend": backend, "read_only": read_only}
    overrides["skillbook_dir"] = str(skillbook_dir) if skillbook_dir else None
    config = dataclasses.replace(
        MCPServerConfig.from_env(), **{name: value for name, value in overrides.items() if value is not None}
    )
    handlers = create_handlers(config, WorkerSettings.from_env())
    if transport == "http":
        typer.echo(f"MCP server on http://{host}:{port}/mcp ({handlers.backend.name} back end)", err=True)
    serve(handlers, transport=transport, host=host, port=port)


def _register_distributed_commands() -> None:
    from .distributed.cli import register_commands

    register_commands(app)


_register_distributed_commands()


def main() -> None:
    """Entry point of the ``ace-workers`` console script: project errors end as one clear line."""
    try:
        app()
    except AceError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise SystemExit(1) from None
