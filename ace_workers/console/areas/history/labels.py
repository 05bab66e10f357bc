"""A skillbook's labels in the console: each label and its log; set, move and delete, each confirmed first.

A move's confirmation names the label, its version now and the version it
goes to, with the skills that change for its readers. The form carries the
version shown (``expect``): a label moved meanwhile is refused (409), not
overwritten unseen.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from ....distributed.store.errors import InvalidLabelError, LabelMovedError
from ....distributed.store.keys import validate_skillbook_name
from ....distributed.store.label_names import validate_label
from ....operations import labels as operations
from ...errors import BadRequestError, ConflictError
from ...views import ActionResult, View, action, page
from .data import (
    diff_between,
    expected_version,
    resolve_version,
    shown_rows,
    summary_of,
)

__all__ = ["ROUTES", "labels_view", "label_move_confirmation", "label_delete_confirmation"]


def label_of(view: View, raw: str | None = None) -> str:
    """The label the URL (or ``raw``) names; BadRequestError naming ``label`` if it cannot be one."""
    raw = view.path("label") if raw is None else raw
    try:
        return validate_label(raw)
    except InvalidLabelError as exc:
        raise BadRequestError(f"label: {exc}") from None


def labels_view(view: View) -> dict[str, Any]:
    """Each label with its version, and the label log (``limit`` moves, newest first)."""
    store = view.store()
    limit = view.int_query("limit", 50, minimum=1, maximum=500)
    head = store.version()
    return {
        "name": store.name,
        "head": head,
        "labels": [
            {"label": label, "version": version, "behind": head - version}
            for label, version in store.labels.all().items()
        ],
        "moves": [move.to_dict() for move in store.labels.history(limit=limit)],
    }


def label_move_confirmation(view: View) -> dict[str, Any]:
    """What pointing the label at ``to`` (a version, ``head`` or a label) changes for its readers."""
    store = view.store()
    label = label_of(view)
    head = store.version()
    to_version = resolve_version(store, view.query("to"), "to", head=head, minimum=1)
    current = store.labels.get(label)
    # A new label has no readers yet: nothing changes for anyone.
    rows = diff_between(store, current, to_version) if current is not None else []
    shown, not_shown = shown_rows(view, rows)
    return {
        "name": store.name,
        "label": label,
        "head": head,
        "from_version": current,
        "to_version": to_version,
        "new": current is None,
        "expect": "" if current is None else current,
        "summary": summary_of(rows),
        "skills": shown,
        "not_shown": not_shown,
    }


def move_label(view: View) -> ActionResult:
    """Point the label at ``to`` (set it if new), if it is still at ``expect`` (required; else 409)."""
    store = view.store()  # read: to parse `to` (a version, head or a label); the operation checks admin
    label = label_of(view)
    to_version = resolve_version(store, view.query("to"), "to", head=store.version(), minimum=1)
    expect = expected_version(view) if "expect" in view.params else operations.NOT_GIVEN
    note = view.query("note").strip()
    try:
        move = operations.set_label(
            view.state.fleet, view.acting, store.name, label, to_version, note=note, expect=expect
        )
    except LabelMovedError as exc:  # said as the confirmation page a person read
        raise ConflictError(_moved_meanwhile(exc)) from None
    verb = "set to" if move.from_version is None else f"moved from version {move.from_version} to"
    return ActionResult(
        f"label {label!r} {verb} version {to_version}",
        f"/skillbooks/{store.name}/labels",
        {"label": label, "from_version": move.from_version, "to_version": to_version},
        notice="label-set" if move.from_version is None else "label-moved",
    )


def label_delete_confirmation(view: View) -> dict[str, Any]:
    """What deleting the label means: the version it points at, which its readers then no longer get."""
    store = view.store()
    label = label_of(view)
    version = store.labels.require(label)
    return {
        "name": store.name,
        "label": label,
        "version": version,
        "head": store.version(),
        "expect": version,
    }


def delete_label(view: View) -> ActionResult:
    """Delete the label, if it is still at ``expect`` (required; else 409); the log keeps the move."""
    name = view.store().name
    label = label_of(view)
    expect = expected_version(view) if "expect" in view.params else operations.NOT_GIVEN
    note = view.query("note").strip()
    try:
        move = operations.delete_label(view.state.fleet, view.acting, name, label, note=note, expect=expect)
    except LabelMovedError as exc:
        raise ConflictError(_moved_meanwhile(exc)) from None
    return ActionResult(
        f"label {label!r} deleted (it was at version {move.from_version})",
        f"/skillbooks/{name}/labels",
        {"label": label, "from_version": move.from_version},
        notice="label-deleted",
    )


def _moved_meanwhile(exc: LabelMovedError) -> str:
    shown = "not set" if exc.expected is None else f"at version {exc.expected}"
    found = "not set" if exc.found is None else f"at version {exc.found}"
    return (
        f"label {exc.label!r}: the confirmation showed it {shown}, but it is {found} now; "
        "nothing was changed (review the move again)"
    )


async def new_label(request: Request) -> Response:
    """The labels page's "new label" form (a GET: ``label``, ``to``) opens that label's move confirmation."""
    name = str(request.path_params["name"])
    try:
        validate_skillbook_name(name)
    except ValueError as exc:
        raise BadRequestError(str(exc)) from None
    try:
        label = validate_label(request.query_params.get("label", "").strip())
    except ValueError as exc:
        raise BadRequestError(f"label: {exc}") from None
    to = request.query_params.get("to", "head").strip() or "head"
    return RedirectResponse(f"/skillbooks/{name}/labels/{label}/move?{urlencode({'to': to})}", 303)


ROUTES: list[BaseRoute] = [
    *page(
        "/skillbooks/{name}/labels",
        "history/labels.html",
        labels_view,
        name="labels",
        summary="A skillbook's labels with their versions, and the label log (?limit=N moves).",
    ),
    Route("/skillbooks/{name}/labels/new", new_label, methods=["GET"], name="label-new"),
    *page(
        "/skillbooks/{name}/labels/{label}/move",
        "history/label_move.html",
        label_move_confirmation,
        name="label-move-confirmation",
        summary="What moving (or setting) a label to ?to=VERSION changes for its readers.",
    ),
    *action(
        "/skillbooks/{name}/labels/{label}",
        move_label,
        name="label-move",
        role=None,  # the operation authorizes: role admin
        summary=(
            "Point a label at `to` (set it if new), if it is still at `expect` "
            "(required; empty: not set); logged with `note`."
        ),
        target="{name}@{label}",
    ),
    *page(
        "/skillbooks/{name}/labels/{label}/delete",
        "history/label_delete.html",
        label_delete_confirmation,
        name="label-delete-confirmation",
        summary="The label to delete and the version it points at.",
    ),
    *action(
        "/skillbooks/{name}/labels/{label}/delete",
        delete_label,
        name="label-delete",
        role=None,  # the operation authorizes: role admin
        summary="Delete a label, if it is still at `expect` (required); logged with `note`.",
        target="{name}@{label}",
    ),
]
