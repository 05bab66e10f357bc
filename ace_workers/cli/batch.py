"""``ace-workers batch``: list the batches; resume one a crashed producer left, or cancel it."""

from __future__ import annotations

import time
from contextlib import ExitStack
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from ..counts import counted
from .access import ApiKeyOption, principal_of
from .fleet import open_command_fleet
from .help import HelpCommand, HelpGroup
from .options import JsonOption, redis_settings
from .output import console, new_table, print_json, print_table, printable
from .service import open_service, require_workers

if TYPE_CHECKING:  # a type only: the store (and redis) load when a batch command runs
    from ..distributed.store.batches import BatchStatus

__all__ = ["batch_app"]

# The most recent batches the index keeps (store.batches.RECENT_BATCHES, not imported for --help).
MOST_RECENT = 1000


batch_app = typer.Typer(
    cls=HelpGroup,
    help="The batches there are; one batch: resume what a crashed producer left unsent, or cancel it.",
    no_args_is_help=True,
)

BatchIdArgument = Annotated[str, typer.Argument(help="The id 'enqueue' printed.")]


@batch_app.command("list", cls=HelpCommand)
def list_command(
    running: Annotated[bool, typer.Option("--running", help="Only the batches still running.")] = False,
    limit: Annotated[
        int, typer.Option(min=1, max=MOST_RECENT, help="How many of the recent batches to list.")
    ] = 50,
    as_json: JsonOption = False,
    api_key: ApiKeyOption = None,
) -> None:
    """List the running and the recent batches, newest first: id, skillbook, state, counts, start.

    A finished batch is listed until its records expire (ACE_RESULT_TTL_SECONDS).
    """
    from ..operations.batches import list_batches  # the store (and redis) load when a command runs

    with open_command_fleet("batch list", "batches live in a shared Redis") as fleet:
        batches = list_batches(fleet, principal_of(fleet, api_key), running_only=running, limit=limit)
    if as_json:
        print_json([{**status.to_dict(), "created": status.created} for status in batches])
    elif not batches:
        typer.echo("no running batches" if running else "no batches")
    else:
        print_table(_batch_table(batches))


def _batch_table(batches: list[BatchStatus]) -> Table:
    table = new_table("batch", "skillbook", "recipe", "state", "done", "failed", "total", "started")
    for status in batches:
        started = time.strftime("%Y-%m-%d %H:%M", time.gmtime(status.created))
        table.add_row(
            printable(status.batch_id),
            printable(status.skillbook),
            printable(status.recipe),
            status.state.label,
            str(status.done),
            str(status.failed),
            str(status.total),
            f"{started} UTC",
        )
    return table


@batch_app.command("resume", cls=HelpCommand)
def resume_command(
    batch_id: BatchIdArgument, as_json: JsonOption = False, api_key: ApiKeyOption = None
) -> None:
    """Send the samples of a batch never sent (its producer died), and again those lost on the way.

    Refused (exit 4) for a batch its producer left half stored: cancel it and send the inputs again.
    """
    # The checks are the operation's, as on the console; the store (and redis) load when it runs.
    from ..distributed.store.batches import BatchState
    from ..operations.batches import resume_batch

    why = "batches live in a shared Redis"
    with open_command_fleet("batch resume", why) as fleet, ExitStack() as stack:

        def send(status: BatchStatus) -> tuple[int, int]:
            # It sends messages: the Celery service, opened only for a batch that is resumed.
            from ..distributed.worker.reconcile import reconcile_batch

            settings = redis_settings("batch resume", why)
            service = stack.enter_context(open_service(settings, run_workers=False, learn_threads=1))
            require_workers(service, status.recipe, status.skillbook)
            sent = service.producer.resume(batch_id)
            return sent, len(reconcile_batch(service.dispatcher, batch_id).redriven)

        result = resume_batch(fleet, principal_of(fleet, api_key), batch_id, send)
    status, sent, redriven = result.status, result.sent, result.redriven
    if as_json:
        print_json({"batch_id": batch_id, "state": status.state.value, "sent": sent, "redriven": redriven})
    elif status.state is not BatchState.RUNNING:
        console.print(f"batch {batch_id} is {status.state.label}: nothing to resume")
    else:
        console.print(
            f"batch {batch_id}: {counted(sent, 'sample')} never sent now on the way; "
            f"{counted(redriven, 'lost sample')} sent again"
        )


@batch_app.command("cancel", cls=HelpCommand)
def cancel_command(
    batch_id: BatchIdArgument, as_json: JsonOption = False, api_key: ApiKeyOption = None
) -> None:
    """Stop a batch: steps not yet run are skipped, nothing is sent again, its records expire."""
    from ..operations.batches import cancel_batch  # the store (and redis) load when a command runs

    with open_command_fleet("batch cancel", "batches live in a shared Redis") as fleet:
        result = cancel_batch(fleet, principal_of(fleet, api_key), batch_id)
    status, cancelled = result.status, result.cancelled_now
    if as_json:
        print_json(
            {
                "batch_id": batch_id,
                "cancelled_now": cancelled,  # false: it had ended already, in `state`
                "state": status.state.value,
                "total": status.total,
                **status.counts(),
            }
        )
    elif not cancelled:
        console.print(f"batch {batch_id} is {status.state.label} already")
    else:
        console.print(
            f"batch {batch_id} cancelled: {status.summary()}; a step running now finishes, "
            "no other step of the batch runs"
        )
