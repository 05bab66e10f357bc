"""The ``ace-workers`` command line: the root app, and every command registered on it once.

Each command lives in a module of its own in this package; ``main`` is the console script.
"""

from __future__ import annotations

from typing import Annotated

import typer

from .. import __version__
from ..errors import AceError
from .batch import batch_app
from .dead_letters import dead_letters_app
from .demo import demo_command
from .enqueue import enqueue_command
from .flower import flower_command
from .hook import hook_app
from .learn import learn_command
from .mcp import mcp_command
from .nightly import beat_command, nightly_app
from .skillbook import skillbook_app
from .status import status_command
from .worker import worker_command

__all__ = ["app", "main"]

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


# Every command, in the order --help lists them.
app.command("demo")(demo_command)
app.command("mcp")(mcp_command)
app.command("learn")(learn_command)
app.command("worker")(worker_command)
app.command("enqueue")(enqueue_command)
app.command("status")(status_command)
app.command("flower")(flower_command)
app.command("beat")(beat_command)
app.add_typer(batch_app, name="batch")
app.add_typer(skillbook_app, name="skillbook")
app.add_typer(dead_letters_app, name="dead-letters")
app.add_typer(nightly_app, name="nightly")
app.add_typer(hook_app, name="hook")


def main() -> None:
    """Entry point of the ``ace-workers`` console script: project errors end as one clear line."""
    try:
        app()
    except AceError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise SystemExit(1) from None
