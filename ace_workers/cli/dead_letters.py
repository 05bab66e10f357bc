"""``ace-workers dead-letters ...``: the samples whose step failed after its retries."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated

import typer

from ..counts import counted
from .access import ApiKeyOption, principal_of
from .fleet import open_command_fleet
from .help import HelpCommand, HelpGroup
from .options import JsonOption, redis_settings
from .output import print_json, printable
from .service import open_service

if TYPE_CHECKING:
    from ..distributed.worker.dead_letters import LetterFilter

__all__ = ["dead_letters_app", "parse_since"]

dead_letters_app = typer.Typer(
    cls=HelpGroup, help="Samples whose step failed after its retries.", no_args_is_help=True
)

WHY = "dead letters live in a shared Redis"
BatchOption = Annotated[str | None, typer.Option("--batch", help="Only the letters of this batch id.")]
SkillbookOption = Annotated[str | None, typer.Option(help="Only the letters of this skillbook.")]
SinceOption = Annotated[
    str | None,
    typer.Option(
        help="Only letters parked since then: a duration back from now (30s, 30m, 2h, 1d) or an ISO "
        "time (2025-05-01T12:00, local time unless it has an offset). Letters parked before "
        "letters had a time never match."
    ),
]


def parse_since(text: str, now: datetime | None = None) -> datetime:
    """The time ``--since`` names (see the worker's parse_since); a usage error naming it if none."""
    # The dead letters' module (and the store) load when letters are read, not for --help.
    from ..distributed.worker.dead_letters import parse_since as parse_letter_time

    try:
        return parse_letter_time(text, now)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--since") from None


def letter_filter(batch: str | None, skillbook: str | None, since: str | None) -> LetterFilter:
    """The filter the options name; checked before anything connects."""
    from ..distributed.worker.dead_letters import LetterFilter

    return LetterFilter(batch_id=batch, skillbook=skillbook, since=parse_since(since) if since else None)


@dead_letters_app.command("list", cls=HelpCommand)
def dead_letters_list(
    batch: BatchOption = None,
    skillbook: SkillbookOption = None,
    since: SinceOption = None,
    as_json: JsonOption = False,
    api_key: ApiKeyOption = None,
) -> None:
    """Show the parked messages: step, error, batch, when (an unreadable one says why)."""
    from ..operations.dead_letters import list_dead_letters

    matches = letter_filter(batch, skillbook, since)
    with open_command_fleet("dead-letters list", WHY) as fleet:
        letters = list_dead_letters(fleet, principal_of(fleet, api_key), matches)
    if as_json:
        print_json([letter.to_dict() for letter in letters])
        return
    if not letters:
        filtered = batch is not None or skillbook is not None or since is not None
        typer.echo("no dead letters" + (" match these options" if filtered else ""))
    for letter in letters:
        if letter.letter is None:
            typer.echo(f"{letter.position}: unreadable: {letter.problem}")
            continue
        parked = letter.parked_at
        where = [f"batch {letter.kwarg('batch_id') or '?'}", f"skillbook {letter.kwarg('skillbook') or '?'}"]
        where += [f"parked {parked.isoformat(timespec='seconds')}"] if parked else []
        error = letter.letter.get("error", "?")
        typer.echo(printable(f"{letter.position}: {letter.step}: {error} ({', '.join(where)})"))


@dead_letters_app.command("retry", cls=HelpCommand)
def dead_letters_retry(
    batch: BatchOption = None,
    skillbook: SkillbookOption = None,
    since: SinceOption = None,
    as_json: JsonOption = False,
) -> None:
    """Send the parked messages (all, or those the options pick) back to their step's queue.

    Needs running workers. A letter is removed only once sent; the others stay. One
    naming a recipe this process is not configured with (ACE_RECIPES), one whose batch
    no longer exists (expired), or one that does not parse, stays parked and is listed,
    one line each on stderr; the exit status is then 1.
    """
    # It sends messages: the Celery service, until the dispatcher takes its place.
    from ..distributed.worker.dead_letters import retry_dead_letters

    matches = letter_filter(batch, skillbook, since)
    settings = redis_settings("dead-letters retry", WHY)
    with open_service(settings, run_workers=False, learn_threads=1) as service:
        report = retry_dead_letters(service.dispatcher, matches)
    if as_json:
        print_json(
            {
                "sent": report.sent,
                "kept": [{**letter.to_dict(), "reason": problem} for letter, problem in report.kept],
            }
        )
    else:
        typer.echo(f"{counted(report.sent, 'message')} sent back")
        for letter, problem in report.kept:
            typer.echo(printable(f"kept {letter.position} ({letter.step}): {problem}"), err=True)
    if report.kept:
        raise typer.Exit(code=1)
