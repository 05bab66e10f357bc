"""The console's history area: a skillbook's change log, any two versions compared, rollback, labels.

The timeline pages back through the change log (``before``, ``limit``); a diff
shows each changed skill at both versions; a rollback is confirmed on a page
naming what it restores, and refused (409) if the head moved since. Labels are
in history_labels.py.
"""

from __future__ import annotations

from typing import Any

from starlette.routing import BaseRoute

from ....distributed.store.errors import HeadMovedError
from ....operations import history as operations
from ...errors import ConflictError
from ...views import ActionResult, View, action, page
from ..change_digests import recent_digests
from .data import (
    diff_between,
    expected_version,
    labels_by_version,
    resolve_version,
    shown_rows,
    summary_of,
    timeline_entry,
)
from .labels import ROUTES as LABEL_ROUTES

__all__ = ["ROUTES", "history_view", "diff_view", "rollback_confirmation", "rollback"]

DEFAULT_LIMIT, MAX_LIMIT = 50, 500


def history_view(view: View) -> dict[str, Any]:
    """The change log newest first, ``limit`` versions below ``before`` (a version; none: from the head)."""
    store = view.store()
    limit = view.int_query("limit", DEFAULT_LIMIT, minimum=1, maximum=MAX_LIMIT)
    before = view.int_query("before", 0, minimum=1) or None
    labels = store.labels.all()
    at = labels_by_version(labels)
    digests = recent_digests(store, limit, before=before)  # kept per version: big entries decoded once
    head, changes = digests.head, digests.digests
    entries = [timeline_entry(store.name, change, at) for change in changes]
    oldest = changes[-1].version if changes else None
    newest = changes[0].version if changes else None
    return {
        "name": store.name,
        "head": head,
        "labels": labels,
        "limit": limit,
        "before": before,
        "entries": entries,
        # The cursors of the neighbouring pages: None where there is none (newer: the first page).
        "older_before": oldest if oldest is not None and oldest > 1 and len(changes) == limit else None,
        "has_newer": before is not None and (newest or before - 1) < head,
        "newer_before": _newer_cursor(newest, before, limit, head),
    }


def _newer_cursor(newest: int | None, before: int | None, limit: int, head: int) -> int | None:
    if before is None:
        return None
    start = (newest if newest is not None else before - 1) + limit + 1
    return start if start <= head else None


def diff_view(view: View) -> dict[str, Any]:
    """Every skill that differs between versions ``from`` and ``to`` (numbers, ``head`` or labels)."""
    store = view.store()
    head = store.version()
    raw_from, raw_to = view.query("from"), view.query("to", "head")
    from_version = resolve_version(store, raw_from, "from", head=head)
    to_version = resolve_version(store, raw_to, "to", head=head)
    rows = diff_between(store, from_version, to_version)
    shown, not_shown = shown_rows(view, rows)
    return {
        "name": store.name,
        "head": head,
        "from": {"ref": raw_from.strip(), "version": from_version},
        "to": {"ref": raw_to.strip(), "version": to_version},
        "labels": store.labels.all(),
        "summary": summary_of(rows),
        "skills": shown,
        "not_shown": not_shown,
    }


# How a diff from the head back to an earlier version reads as a rollback.
_ROLLBACK_WORDS = {"added": "re-added", "removed": "removed", "changed": "restored"}


def rollback_confirmation(view: View) -> dict[str, Any]:
    """What rolling back to version ``to`` would do: each skill restored, removed or re-added."""
    store = view.store()
    head = store.version()
    to_version = resolve_version(store, view.query("to"), "to", head=head)
    rows = diff_between(store, head, to_version)
    for row in rows:
        row["rollback"] = _ROLLBACK_WORDS[row["change"]]
    counts = {word: sum(1 for row in rows if row["rollback"] == word) for word in _ROLLBACK_WORDS.values()}
    shown, not_shown = shown_rows(view, rows)
    return {
        "name": store.name,
        "head": head,
        "to": to_version,
        "expect": head,
        "counts": counts,
        "skills": shown,
        "not_shown": not_shown,
        "labels": store.labels.all(),
    }


def rollback(view: View) -> ActionResult:
    """Restore version ``to`` as a new version, if the head is still ``expect`` (required; else 409)."""
    store = view.store()  # read: to parse `to` (a version, head or a label); the operation checks admin
    to_version = resolve_version(store, view.query("to"), "to", head=store.version())
    expect = expected_version(view) if "expect" in view.params else operations.NOT_GIVEN
    try:
        done = operations.rollback(
            view.state.fleet,
            view.acting,
            store.name,
            to_version,
            note=view.query("note").strip(),
            via="console",
            expect=expect,
        )
    except HeadMovedError as exc:  # said as the confirmation page a person read
        raise ConflictError(
            f"skillbook {store.name!r}: the confirmation showed the head at version {exc.expected}, "
            f"but it is at {exc.found} now; nothing was rolled back (review the rollback again)"
        ) from None
    history = f"/skillbooks/{store.name}/history"
    if not done.changed:
        return ActionResult(
            f"version {to_version} is the head already: nothing to roll back",
            history,
            notice="nothing-to-roll-back",
        )
    return ActionResult(
        f"rolled back to version {to_version}, now version {done.version}",
        history,
        {"version": done.version, "restored_version": to_version},
        notice="rolled-back",
    )


ROUTES: list[BaseRoute] = [
    *page(
        "/skillbooks/{name}/history",
        "history/timeline.html",
        history_view,
        name="history",
        summary="A skillbook's change log, newest first: ?before=VERSION&limit=N (at most 500).",
    ),
    *page(
        "/skillbooks/{name}/diff",
        "history/diff.html",
        diff_view,
        name="diff",
        summary="Every skill that differs between ?from= and ?to= (versions, 'head' or labels).",
    ),
    *page(
        "/skillbooks/{name}/rollback",
        "history/rollback.html",
        rollback_confirmation,
        name="rollback-confirmation",
        summary="What rolling back to ?to=VERSION would restore, remove and re-add.",
    ),
    *action(
        "/skillbooks/{name}/rollback",
        rollback,
        name="rollback",
        role=None,  # the operation authorizes: role admin
        summary=(
            "Roll back to version `to` as a new version, if the head is still `expect` "
            "(required: the head you saw)."
        ),
        target="{name}",
    ),
    *LABEL_ROUTES,
]
