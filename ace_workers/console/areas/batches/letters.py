"""The dead letters: samples whose step failed for good, listed by batch, skillbook and time, and retried.

The filter is ``dead-letters list``'s (:class:`~ace_workers.distributed.worker.dead_letters.LetterFilter`,
``since`` read by the same ``parse_since``), and the retry button sends back exactly the letters
the filter shown picks, as ``dead-letters retry`` with the same options does.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from starlette.routing import BaseRoute

from ....counts import counted
from ....distributed.store.batches import sample_key
from ....distributed.store.keys import dead_letters_key
from ....distributed.worker.dead_letters import (
    DeadLetter,
    LetterFilter,
    parse_since,
    read_dead_letters,
    retry_dead_letters,
)
from ...errors import BadRequestError
from ...views import ActionResult, View, action, page

__all__ = ["LETTER_ROUTES", "dead_letters_page", "retry_letters"]

_FILTER_FIELDS = ("batch", "skillbook", "since")


def dead_letters_page(view: View) -> dict[str, Any]:
    """The parked letters the filter picks (``?batch=``, ``?skillbook=``, ``?since=``), oldest first."""
    fields, matches = _filter(view)
    letters = [
        letter
        for letter in read_dead_letters(view.service.runtime, matches)
        if view.can_see(letter.kwarg("skillbook"))
    ]
    if view.fleet_wide:
        parked = int(view.state.redis.llen(dead_letters_key(view.state.prefix)))
    else:  # the count of the tenant's own letters: others' say nothing to it
        parked = sum(
            1 for letter in read_dead_letters(view.service.runtime) if view.can_see(letter.kwarg("skillbook"))
        )
    return {
        "filter": fields,
        "letters": [_letter(letter) for letter in letters],
        "shown": len(letters),
        "parked": parked,
    }


def retry_letters(view: View) -> ActionResult:
    """Send back the letters the filter picks; the others stay parked."""
    fields, matches = _filter(view)
    if not view.fleet_wide:
        # Letters are fleet-wide; a tenant's key retries those of a skillbook it names (and owns).
        if not fields["skillbook"]:
            raise BadRequestError(
                "an API key of a tenant retries one skillbook's letters: name it (skillbook=)"
            )
        view.authorize(fields["skillbook"])
    report = retry_dead_letters(view.service.dispatcher, matches)
    message = f"{counted(report.sent, 'dead letter')} sent back to their step"
    if report.kept:
        message += f"; {len(report.kept)} kept: {report.kept[0][1]}"
    query = urlencode({key: value for key, value in fields.items() if value})
    return ActionResult(
        message,
        f"/dead-letters?{query}" if query else "/dead-letters",
        {
            "sent": report.sent,
            "kept": len(report.kept),
            **{key: value for key, value in fields.items() if value},
        },
        notice="letters-kept" if report.kept else "letters-sent",
    )


def _filter(view: View) -> tuple[dict[str, str], LetterFilter]:
    """The filter's fields as given (for links and forms) and the filter they make; 400 naming a bad one."""
    fields = {name: view.query(name).strip() for name in _FILTER_FIELDS}
    since = None
    if fields["since"]:
        try:
            since = parse_since(fields["since"])
        except ValueError as exc:
            raise BadRequestError(f"since: {exc}") from None
    matches = LetterFilter(
        batch_id=fields["batch"] or None, skillbook=fields["skillbook"] or None, since=since
    )
    return fields, matches


def _letter(letter: DeadLetter) -> dict[str, Any]:
    """A letter as ``dead-letters list --json`` shows it, and the sample it is of."""
    epoch, index = letter.kwarg("epoch"), letter.kwarg("sample_index")
    sample = sample_key(epoch, index) if isinstance(epoch, int) and isinstance(index, int) else None
    return {**letter.to_dict(), "sample": sample}


LETTER_ROUTES: list[BaseRoute] = [
    *page(
        "/dead-letters",
        "batches/dead_letters.html",
        dead_letters_page,
        name="dead-letters",
        summary="Parked dead letters (?batch=ID, ?skillbook=NAME, ?since=2h or an ISO time), oldest first.",
    ),
    *action(
        "/dead-letters/retry",
        retry_letters,
        name="dead-letters:retry",
        role="admin",
        summary="Send back the dead letters the filter (batch, skillbook, since) picks.",
        target="dead-letters",
    ),
]
