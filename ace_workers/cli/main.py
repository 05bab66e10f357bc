"""The ``ace-workers`` command line: the root app, and every command registered on it once.

Each command lives in a module of its own in this package; ``main`` is the console script.
"""

from __future__ import annotations

from typing import Annotated

import redis
import typer

from .. import __version__
from ..distributed.store.errors import MigrationRefusedError, SchemaMismatchError
from ..distributed.worker.app import is_redis_full
from ..errors import AceError, SettingsError
from .batch import batch_app
from .common import printable
from .console import console_command
from .dead_letters import dead_letters_app
from .demo import demo_command
from .enqueue import enqueue_command
from .exit_codes import (
    EXIT_CODES_HELP,
    EXIT_FAILURES,
    EXIT_REFUSED,
    EXIT_UNREACHABLE,
    EXIT_USAGE,
    UNREACHABLE,
    unreachable_line,
)
from .flower import flower_command
from .help import HelpCommand, HelpGroup
from .hook import hook_app
from .keys import key_app
from .learn import learn_command
from .lifecycle import add_lifecycle_commands
from .mcp import mcp_command
from .migrate import migrate_command
from .nightly import beat_command, nightly_app
from .provenance import skillbook_why
from .skillbook import skillbook_app
from .status import status_command
from .tenant import tenant_app
from .worker import worker_command

# Commands that register themselves on the skillbook group and its label group when imported.
from .evaluate import evaluate_command  # noqa: F401  isort: skip
from .promote import promote_command  # noqa: F401  isort: skip
from .tenant_usage import usage_command  # noqa: F401  isort: skip

__all__ = ["app", "main", "redis_error_line"]

app = typer.Typer(
    cls=HelpGroup,
    help="Agentic Context Engineering on distributed Celery workers.",
    epilog=EXIT_CODES_HELP,
    no_args_is_help=True,
    add_completion=True,
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


@app.command("version", cls=HelpCommand)
def version_command() -> None:
    """Print the version."""
    typer.echo(f"ace-workers {__version__}")


# Every command, in the order --help lists them.
app.command("demo", cls=HelpCommand)(demo_command)
app.command("mcp", cls=HelpCommand)(mcp_command)
app.command("console", cls=HelpCommand)(console_command)
app.command("learn", cls=HelpCommand)(learn_command)
app.command("worker", cls=HelpCommand)(worker_command)
app.command("enqueue", cls=HelpCommand)(enqueue_command)
app.command("status", cls=HelpCommand)(status_command)
app.command("flower", cls=HelpCommand)(flower_command)
app.command("beat", cls=HelpCommand)(beat_command)
app.command("migrate", cls=HelpCommand)(migrate_command)
app.add_typer(batch_app, name="batch")
add_lifecycle_commands(skillbook_app)  # pin, unpin, archive, restore, archived, prune
app.add_typer(skillbook_app, name="skillbook")
skillbook_app.command("why", cls=HelpCommand)(skillbook_why)
app.add_typer(dead_letters_app, name="dead-letters")
app.add_typer(nightly_app, name="nightly")
app.add_typer(hook_app, name="hook")
app.add_typer(key_app, name="key")
app.add_typer(tenant_app, name="tenant")


def main() -> None:
    """Entry point of the ``ace-workers`` console script: project errors end as one clear line.

    The exit code says which kind (:mod:`.exit_codes`): 3 when Redis, the broker or the
    workers could not be reached, 2 for a setting missing or wrong or data of another schema,
    4 for a migration refused (the fleet runs), 1 for any other error a command did not handle.
    """
    try:
        app()
    except UNREACHABLE as exc:
        typer.echo(f"error: {unreachable_line(exc)}", err=True)
        raise SystemExit(EXIT_UNREACHABLE) from None
    except (SettingsError, SchemaMismatchError) as exc:
        # A setting missing or wrong, or a Redis of another schema than this code's: fixed (the
        # setting, the ace-workers installed, or `migrate` run) before running again, as an argument.
        typer.echo(f"error: {exc}", err=True)
        raise SystemExit(EXIT_USAGE) from None
    except MigrationRefusedError as exc:  # the fleet still runs, or another migrate does: not now
        typer.echo(f"error: {exc}", err=True)
        raise SystemExit(EXIT_REFUSED) from None
    except AceError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise SystemExit(EXIT_FAILURES) from None
    except redis.RedisError as exc:
        # An answer of Redis no command handles (out of memory, a read-only replica, ...): one
        # line naming it, instead of a traceback hundreds of lines long.
        typer.echo(f"error: {redis_error_line(exc)}", err=True)
        raise SystemExit(EXIT_FAILURES) from None


def redis_error_line(exc: redis.RedisError) -> str:
    """What Redis refused, in one line (its message may carry key names: control characters escaped)."""
    said = printable(f"{type(exc).__name__}: {exc}").rstrip(".")
    if is_redis_full(exc):
        return (
            f"Redis is out of memory (used memory > maxmemory, no eviction) and refused a command: {said}. "
            "Free memory or raise maxmemory, then run the command again."
        )
    return f"Redis refused a command: {said}"
