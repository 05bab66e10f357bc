"""The ``ace-workers`` command line."""

from __future__ import annotations

import typer

from . import __version__

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
    version: bool = typer.Option(
        False, "--version", callback=_print_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Agentic Context Engineering on distributed Celery workers."""


@app.command("version")
def version_command() -> None:
    """Print the version."""
    typer.echo(f"ace-workers {__version__}")


@app.command("demo")
def demo_command() -> None:
    """Run a small pipeline: answers in the foreground, learning in the background."""
    from .demo import run_demo

    results = run_demo()
    if not all(result.ok for result in results):
        raise typer.Exit(code=1)


def main() -> None:
    """Entry point of the ``ace-workers`` console script."""
    app()
