"""``ace-workers dead-letters ...``: the samples whose step failed after its retries."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from ..distributed.settings import WorkerSettings
from ..distributed.worker.dead_letters import DeadLetter, read_dead_letters, retry_dead_letters
from .common import open_service, print_json
from .help import HelpCommand, HelpGroup

__all__ = ["dead_letters_app"]

dead_letters_app = typer.Typer(
    cls=HelpGroup, help="Samples whose step failed after its retries.", no_args_is_help=True
)


@dead_letters_app.command("list", cls=HelpCommand)
def dead_letters_list(
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON document, for scripts.")] = False,
) -> None:
    """Show the parked messages: step, error, batch (an unreadable one says why)."""
    with open_service(WorkerSettings.from_env(), run_workers=False, learn_threads=1) as service:
        letters = read_dead_letters(service.runtime)
        if as_json:
            print_json([_letter_to_json(letter) for letter in letters])
            return
        for letter in letters:
            if letter.letter is None:
                typer.echo(f"{letter.position}: unreadable: {letter.problem}")
                continue
            batch = letter.letter["kwargs"].get("batch_id", "?")
            typer.echo(f"{letter.position}: {letter.step}: {letter.letter.get('error', '?')} (batch {batch})")


@dead_letters_app.command("retry", cls=HelpCommand)
def dead_letters_retry() -> None:
    """Send every parked message back to its step's queue (needs running workers).

    A letter is removed only once sent. One naming a recipe this process is not
    configured with (ACE_RECIPES), one whose batch no longer exists (expired), or
    one that does not parse, stays parked and is listed, one line each; the exit
    status is then 1.
    """
    with open_service(WorkerSettings.from_env(), run_workers=False, learn_threads=1) as service:
        report = retry_dead_letters(service.app, service.runtime)
        typer.echo(f"{report.sent} message(s) sent back")
        for letter, problem in report.kept:
            typer.echo(f"kept {letter.position} ({letter.step}): {problem}", err=True)
        if report.kept:
            raise typer.Exit(code=1)


def _letter_to_json(letter: DeadLetter) -> dict[str, Any]:
    """What `dead-letters list` shows of a letter, as JSON: an unreadable one has a problem, no step."""
    if letter.letter is None:
        return {"position": letter.position, "problem": letter.problem}
    return {
        "position": letter.position,
        "step": letter.step,
        "error": letter.letter.get("error"),
        "batch_id": letter.letter["kwargs"].get("batch_id"),
        "problem": letter.problem,
    }
