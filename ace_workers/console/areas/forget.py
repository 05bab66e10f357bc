"""The console's forget page: erase a person's traces from the fleet, in two steps, and the record of it.

Step one (``GET /forget?kind=subject&value=metadata.user_id=alice``) is a dry run: what matches,
the records each place would lose, the skills learned only from them. Step two is the form that
page shows, posted with its CSRF token and ``confirm=yes``: without that field nothing is erased.
The console does not wait for matched samples still in flight: it refuses, naming their
batches, and the operator confirms again once they finished (or cancels them first).
Role admin, checked by the operation (a tenant's admin forgets within its tenant).
"""

from __future__ import annotations

from typing import Any

from starlette.routing import BaseRoute

from ...distributed.store.erasure_selector import SELECTOR_KINDS, Selector, parse_subject
from ...distributed.store.errors import InvalidSelectorError
from ...operations.forget import DERIVED_ACTIONS, forget, forget_history
from ..errors import BadRequestError
from ..views import ActionResult, View, action, page

__all__ = ["ROUTES", "forget_action", "forget_page"]

# The console answers at once: a matched sample in flight is refused, not waited for.
_WAIT_SECONDS = 0.0


def _selector(kind: str, value: str) -> Selector:
    """The selector of the form's kind and value; BadRequestError naming the field otherwise."""
    if kind not in SELECTOR_KINDS:
        raise BadRequestError(f"kind: {kind!r} is not one of {', '.join(SELECTOR_KINDS)}")
    try:
        return parse_subject(value) if kind == "subject" else Selector(kind, value)
    except InvalidSelectorError as exc:
        raise BadRequestError(f"value: {exc}") from None


def _derived(text: str) -> str:
    if text not in DERIVED_ACTIONS:
        raise BadRequestError(f"derived: {text!r} is not one of {', '.join(DERIVED_ACTIONS)}")
    return text


def forget_page(view: View) -> dict[str, Any]:
    """The form, a dry run of the selector the query names (if any), and the erasure records."""
    history = forget_history(view.state.fleet, view.acting)
    kind, value = view.query("kind"), view.query("value")
    data: dict[str, Any] = {
        "history": history,
        "kinds": list(SELECTOR_KINDS),
        "derived_actions": DERIVED_ACTIONS,
    }
    if not value:
        return {**data, "preview": None}
    derived = _derived(view.query("derived", "list"))
    preview = forget(
        view.state.fleet, view.acting, _selector(kind, value), dry_run=True, derived_action=derived
    )
    return {**data, "preview": preview.to_dict(), "kind": kind, "value": value, "derived": derived}


def forget_action(view: View) -> ActionResult:
    """Erase what the confirmed selector matches, record the erasure; the page shows the record."""
    params = view.params
    if params.get("confirm") != "yes":
        raise BadRequestError("confirm: erasing needs confirm=yes (review the dry run first); nothing erased")
    selector = _selector(params.get("kind", ""), params.get("value", ""))
    result = forget(
        view.state.fleet,
        view.acting,
        selector,
        derived_action=_derived(params.get("derived", "list")),
        wait_seconds=_WAIT_SECONDS,
    )
    data = {
        "erasure_id": result.erasure_id,
        "samples": result.samples,
        "records": result.erased,
        "derived": sum(len(ids) for ids in result.derived.values()),
    }
    if result.nothing_matched:
        message = f"nothing matched {selector.describe()}: nothing to erase (erasure {result.erasure_id})"
        return ActionResult(message, "/forget", data, notice="forget-nothing")
    message = f"erasure {result.erasure_id}: {result.samples} samples matched, {result.erased} records erased"
    return ActionResult(message, "/forget", data, notice="forgotten")


ROUTES: list[BaseRoute] = [
    *page(
        "/forget",
        "forget.html",
        forget_page,
        name="forget",
        summary="Forget (role admin): the erasure records, and a dry run of ?kind=&value=&derived=.",
    ),
    *action(
        "/forget/erase",
        forget_action,
        name="forget:erase",
        role=None,  # forget checks role admin (a tenant's admin: within its tenant)
        summary="Erase what kind/value match everywhere (confirm=yes); derived: list, archive or remove.",
        target="fleet",
    ),
]
