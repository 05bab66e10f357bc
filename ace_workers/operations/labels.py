"""Labels: the versions readers of ``NAME@LABEL`` serve; listing them, and setting, moving, deleting one.

Reading needs role read; a move or a delete, admin. Each move is logged with the principal
as its actor. A move or a delete needs ``expect``, the version its caller saw the label at
(None: not set; see expect.py): LabelMovedError when the label is elsewhere now, nothing changed.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..distributed.store.labels import LabelMove, validate_label
from .access import ADMIN, READ, existing_store
from .expect import NOT_GIVEN, required_expect
from .fleet import FleetClient
from .principal import Principal

__all__ = [
    "MOVE_ROLE",
    "NOT_GIVEN",
    "LabelList",
    "LabelView",
    "list_labels",
    "show_label",
    "label_history",
    "set_label",
    "delete_label",
]

MOVE_ROLE = ADMIN


@dataclass(frozen=True)
class LabelList:
    """Every label of a skillbook and the version it points at, with the head's version."""

    name: str
    head: int
    labels: dict[str, int]


@dataclass(frozen=True)
class LabelView:
    """One label: the version it points at, the head's, and its moves (newest first)."""

    name: str
    label: str
    version: int
    head: int
    moves: list[LabelMove]


def list_labels(fleet: FleetClient, principal: Principal, name: str) -> LabelList:
    """Every label of ``name``."""
    store = existing_store(fleet, principal, READ, name)
    return LabelList(name, store.version(), store.labels.all())


def show_label(
    fleet: FleetClient, principal: Principal, name: str, label: str, *, limit: int = 20
) -> LabelView:
    """Where ``label`` points and its last ``limit`` moves; UnknownLabelError naming the labels there are."""
    validate_label(label)
    store = existing_store(fleet, principal, READ, name)
    version = store.labels.require(label)
    return LabelView(name, label, version, store.version(), store.labels.history(label, limit=limit))


def label_history(
    fleet: FleetClient, principal: Principal, name: str, label: str | None = None, *, limit: int = 50
) -> list[LabelMove]:
    """The last ``limit`` label moves of ``name`` (of ``label`` only, if given), newest first."""
    if label is not None:
        validate_label(label)
    return existing_store(fleet, principal, READ, name).labels.history(label, limit=limit)


def set_label(
    fleet: FleetClient,
    principal: Principal,
    name: str,
    label: str,
    version: int | None,
    *,
    note: str = "",
    expect: int | None = NOT_GIVEN,
) -> LabelMove:
    """Point ``label`` at ``version`` (None: the head), if it is still at ``expect``; one logged move.

    Raises ExpectRequiredError without ``expect``, VersionRangeError for a version the skillbook
    does not have, LabelMovedError when the label is elsewhere than ``expect``.
    """
    validate_label(label)
    store = existing_store(fleet, principal, MOVE_ROLE, name)
    seen = required_expect(expect, f"moving label {label!r} of skillbook {name!r}")
    number = store.version() if version is None else version
    return store.labels.set(label, number, actor=principal.name, note=note, expect=seen)


def delete_label(
    fleet: FleetClient,
    principal: Principal,
    name: str,
    label: str,
    *,
    note: str = "",
    expect: int | None = NOT_GIVEN,
) -> LabelMove:
    """Remove ``label`` (its readers then fail, naming it), if it is still at ``expect``; the log keeps it.

    Raises ExpectRequiredError without ``expect``, LabelMovedError when the label is elsewhere.
    """
    validate_label(label)
    store = existing_store(fleet, principal, MOVE_ROLE, name)
    seen = required_expect(expect, f"deleting label {label!r} of skillbook {name!r}")
    return store.labels.delete(label, actor=principal.name, note=note, expect=seen)
