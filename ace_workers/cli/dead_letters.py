"""``ace-workers dead-letters ...``: the samples whose step failed after its retries."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

import typer

from ..distributed.worker.dead_letters import DeadLetter, LetterFilter, read_dead_letters, retry_dead_letters
from .common import JsonOption, open_service, print_json, printable, redis_settings
from .help import HelpCommand, HelpGroup

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

_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhd])")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_since(text: str, now: datetime | None = None) -> datetime:
    """The time ``--since`` names, timezone-aware: ``now`` minus a duration, or an ISO time."""
    now = now or datetime.now(UTC)
    duration = _DURATION.fullmatch(text.strip())
    if duration:
        return now - timedelta(seconds=float(duration[1]) * _UNIT_SECONDS[duration[2]])
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise typer.BadParameter(
            f"{text!r} is neither a duration (30s, 30m, 2h, 1d) nor an ISO time (2025-05-01T12:00)",
            param_hint="--since",
        ) from None
    return when if when.tzinfo is not None else when.astimezone()  # no offset: this machine's time


def letter_filter(batch: str | None, skillbook: str | None, since: str | None) -> LetterFilter:
    """The filter the options name; checked before anything connects."""
    return LetterFilter(batch_id=batch, skillbook=skillbook, since=parse_since(since) if since else None)


@dead_letters_app.command("list", cls=HelpCommand)
def dead_letters_list(
    batch: BatchOption = None,
    skillbook: SkillbookOption = None,
    since: SinceOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show the parked messages: step, error, batch, when (an unreadable one says why)."""
    matches = letter_filter(batch, skillbook, since)
    settings = redis_settings("dead-letters list", WHY)
    with open_service(settings, run_workers=False, learn_threads=1) as service:
        letters = read_dead_letters(service.runtime, matches)
    if as_json:
        print_json([_letter_to_json(letter) for letter in letters])
        return
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
    matches = letter_filter(batch, skillbook, since)
    settings = redis_settings("dead-letters retry", WHY)
    with open_service(settings, run_workers=False, learn_threads=1) as service:
        report = retry_dead_letters(service.app, service.runtime, matches)
    if as_json:
        print_json(
            {
                "sent": report.sent,
                "kept": [{**_letter_to_json(letter), "reason": problem} for letter, problem in report.kept],
            }
        )
    else:
        typer.echo(f"{report.sent} message(s) sent back")
        for letter, problem in report.kept:
            typer.echo(printable(f"kept {letter.position} ({letter.step}): {problem}"), err=True)
    if report.kept:
        raise typer.Exit(code=1)


def _letter_to_json(letter: DeadLetter) -> dict[str, Any]:
    """What `dead-letters list` shows of a letter, as JSON: an unreadable one has a problem, no step."""
    if letter.letter is None:
        return {"position": letter.position, "problem": letter.problem}
    parked = letter.parked_at
    return {
        "position": letter.position,
        "step": letter.step,
        "error": letter.letter.get("error"),
        "batch_id": letter.kwarg("batch_id"),
        "skillbook": letter.kwarg("skillbook"),
        "parked_at": parked.isoformat() if parked else None,
        "problem": letter.problem,
    }
