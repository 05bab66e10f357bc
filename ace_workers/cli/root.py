"""The ``ace-workers`` command line: the root app, every command listed once, and how errors end.

Each command module exports its commands (a Typer group, or functions); this module lists them
all, in the order ``--help`` shows them. No module registers a command by being imported.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer._click import Context
from typer._click.exceptions import ClickException

from .. import __version__
from .backup import backup_command, restore_command
from .batch import batch_app
from .compare import compare_command
from .console import console_command
from .dead_letters import dead_letters_app
from .demo import demo_command
from .enqueue import enqueue_command
from .evaluate import evaluate_command
from .exit_codes import EXIT_CODES_HELP
from .flower import flower_command
from .forget import forget_command
from .help import HelpCommand, HelpGroup
from .hook import hook_app
from .intake import intake_command
from .keys import key_app
from .labels import label_app
from .learn import learn_command
from .lifecycle import (
    skillbook_archive,
    skillbook_archived,
    skillbook_pin,
    skillbook_prune,
    skillbook_restore,
    skillbook_unpin,
)
from .mcp import mcp_command
from .migrate import migrate_command
from .nightly import beat_command, nightly_app
from .promote import promote_command
from .provenance import skillbook_why
from .retention import retention_app
from .review import review_app
from .skillbook import skillbook_app
from .status import status_command
from .tenant import tenant_app
from .tenant_usage import usage_command
from .worker import worker_command

if TYPE_CHECKING:
    import redis

__all__ = ["app", "main", "redis_error_line"]


def redis_error_line(exc: redis.RedisError) -> str:
    """What Redis refused, in one line (its message may carry key names: control characters escaped)."""
    from ..distributed.worker.redis_health import is_redis_full
    from .output import printable

    said = printable(f"{type(exc).__name__}: {exc}").rstrip(".")
    if is_redis_full(exc):
        return (
            f"Redis is out of memory (used memory > maxmemory, no eviction) and refused a command: {said}. "
            "Free memory or raise maxmemory, then run the command again."
        )
    return f"Redis refused a command: {said}"


def error_line(exc: BaseException) -> tuple[str, int] | None:
    """The one line and exit code an error ends a command with; None for a bug (its traceback shows).

    The exit code is the error's row in operations' one table (:func:`outcome_of`); what could
    not be reached, and what Redis refused, keep their own lines. An AceError the table does not
    name ran and failed (exit 1).
    """
    # Imported on the first error: the table imports every error module and redis, which a
    # command that succeeds (or --help) never needs.
    import redis

    from ..errors import AceError
    from ..operations.outcomes import UNEXPECTED, outcome_of
    from .exit_codes import EXIT_FAILURES, EXIT_UNREACHABLE, broker_errors, unreachable_line
    from .output import printable

    outcome = outcome_of(exc)
    if outcome.exit_code == EXIT_UNREACHABLE or isinstance(exc, broker_errors()):
        return unreachable_line(exc), EXIT_UNREACHABLE
    if outcome is not UNEXPECTED:
        return printable(exc), outcome.exit_code
    if isinstance(exc, redis.RedisError):
        # An answer of Redis no command handles (out of memory, a read-only replica, ...): one
        # line naming it, instead of a traceback hundreds of lines long.
        return redis_error_line(exc), EXIT_FAILURES
    if isinstance(exc, AceError):
        return printable(exc), EXIT_FAILURES
    return None


class RootGroup(HelpGroup):
    """The root command: a project error a command raises ends as one line on stderr and its exit code,
    for the console script and for ``CliRunner`` alike."""

    def invoke(self, ctx: Context) -> Any:
        try:
            return super().invoke(ctx)
        except (ClickException, typer.Exit, typer.Abort):
            raise
        except Exception as exc:
            said = error_line(exc)
            if said is None:
                raise
            line, code = said
            typer.echo(f"error: {line}", err=True)
            raise typer.Exit(code) from None


app = typer.Typer(
    cls=RootGroup,
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
app.command("intake", cls=HelpCommand)(intake_command)
app.command("learn", cls=HelpCommand)(learn_command)
app.command("worker", cls=HelpCommand)(worker_command)
app.command("enqueue", cls=HelpCommand)(enqueue_command)
app.command("status", cls=HelpCommand)(status_command)
app.command("flower", cls=HelpCommand)(flower_command)
app.command("beat", cls=HelpCommand)(beat_command)
app.command("migrate", cls=HelpCommand)(migrate_command)
app.command("backup", cls=HelpCommand)(backup_command)
app.command("restore", cls=HelpCommand)(restore_command)
app.command("forget", cls=HelpCommand)(forget_command)
app.add_typer(batch_app, name="batch")
# skillbook: its own commands (list, show, import, diff, export, history, dedup, rollback), then these.
skillbook_app.command("compare", cls=HelpCommand)(compare_command)
skillbook_app.command("evaluate", cls=HelpCommand)(evaluate_command)
for _name, _command in (
    ("pin", skillbook_pin),
    ("unpin", skillbook_unpin),
    ("archive", skillbook_archive),
    ("restore", skillbook_restore),
    ("archived", skillbook_archived),
    ("prune", skillbook_prune),
):
    skillbook_app.command(_name, cls=HelpCommand)(_command)
skillbook_app.command("why", cls=HelpCommand)(skillbook_why)
label_app.command("promote", cls=HelpCommand)(promote_command)
skillbook_app.add_typer(review_app, name="review")
skillbook_app.add_typer(label_app, name="label")
app.add_typer(skillbook_app, name="skillbook")
app.add_typer(dead_letters_app, name="dead-letters")
app.add_typer(nightly_app, name="nightly")
app.add_typer(retention_app, name="retention")
app.add_typer(hook_app, name="hook")
app.add_typer(key_app, name="key")
tenant_app.command("usage", cls=HelpCommand)(usage_command)
app.add_typer(tenant_app, name="tenant")


def main() -> None:
    """Entry point of the ``ace-workers`` console script.

    A project error ends as one clear line whose exit code says which kind (:mod:`.exit_codes`):
    3 when Redis, the broker or the workers could not be reached, 2 for a bad argument, a setting
    missing or wrong, something named that does not exist or data of another schema, 4 for a
    refusal (forbidden, a conflict, a gate), 1 for any other error a command did not handle.
    """
    app()
