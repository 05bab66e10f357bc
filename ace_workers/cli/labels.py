"""``ace-workers skillbook label ...``: labelled versions (prod, canary, ...) that readers serve.

A label points at a version; readers given ``NAME@LABEL`` serve that version while
learning keeps writing to the head. Every move is logged with its actor and note.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.text import Text

from ..distributed.store.label_names import HEAD
from .access import ApiKeyOption
from .fleet import acting_fleet
from .help import HelpCommand, HelpGroup
from .options import (
    ActorOption,
    JsonOption,
    NoteOption,
    SkillbookNameArgument,
    check_label,
    check_skillbook_name,
)
from .output import new_table, print_json, print_table, printable

if TYPE_CHECKING:
    from ..distributed.store.labels import LabelMove

__all__ = ["label_app"]

label_app = typer.Typer(
    cls=HelpGroup,
    help="Labelled versions: point prod, canary or any name at a version; readers of a label serve it.",
    no_args_is_help=True,
)

WHY = "labels live with their skillbook in a shared Redis"
LabelArgument = Annotated[str, typer.Argument(help="The label: prod, canary or any name.")]


@label_app.command("set", cls=HelpCommand)
def label_set(
    name: SkillbookNameArgument,
    label: LabelArgument,
    version: Annotated[
        str, typer.Argument(help="The version the label points at: 1 to the head's, or 'head'.")
    ],
    note: NoteOption = "",
    actor: ActorOption = None,
    as_json: JsonOption = False,
    api_key: ApiKeyOption = None,
) -> None:
    """Point LABEL at VERSION (set it, or move it): one atomic, logged move."""
    from ..operations import labels as operations  # the store loads when the command runs, not for --help

    check_skillbook_name(name)
    check_label(label)
    number = None if version == HEAD else _version_number(version)
    with acting_fleet("skillbook label set", WHY, api_key, actor) as (fleet, who):
        # No confirmation page here: the move expects the label where it is now (operations/expect.py).
        seen = operations.list_labels(fleet, who, name).labels.get(label)
        move = operations.set_label(fleet, who, name, label, number, note=note, expect=seen)
    if as_json:
        print_json({"name": name, **move.to_dict()})
    elif move.from_version is None:
        typer.echo(f"skillbook {name!r}: label {label!r} set to version {move.to_version}")
    else:
        typer.echo(
            f"skillbook {name!r}: label {label!r} moved from version {move.from_version} to {move.to_version}"
        )


def _version_number(text: str) -> int:
    """VERSION as given: a whole number (the store checks its range), else a usage error naming it."""
    if not text.isdigit():
        raise typer.BadParameter(f"{text!r} is neither a version number nor {HEAD!r}", param_hint="VERSION")
    return int(text)


@label_app.command("show", cls=HelpCommand)
def label_show(
    name: SkillbookNameArgument,
    label: LabelArgument,
    limit: Annotated[int, typer.Option(min=1, help="How many of its moves, newest first.")] = 20,
    as_json: JsonOption = False,
    api_key: ApiKeyOption = None,
) -> None:
    """The version LABEL points at, and its moves (newest first)."""
    from ..operations import labels as operations

    check_skillbook_name(name)
    check_label(label)
    with acting_fleet("skillbook label show", WHY, api_key) as (fleet, who):
        shown = operations.show_label(fleet, who, name, label, limit=limit)
    version, head, moves = shown.version, shown.head, shown.moves
    if as_json:
        print_json(
            {
                "name": name,
                "label": label,
                "version": version,
                "head": head,
                "moves": [move.to_dict() for move in moves],
            }
        )
        return
    behind = f", {head - version} behind the head ({head})" if head > version else " (the head)"
    typer.echo(f"skillbook {name!r}: label {label!r} is at version {version}{behind}")
    _print_moves(moves)


@label_app.command("list", cls=HelpCommand)
def label_list(
    name: SkillbookNameArgument, as_json: JsonOption = False, api_key: ApiKeyOption = None
) -> None:
    """Every label of a skillbook and the version it points at, with the head's version."""
    from ..operations import labels as operations

    check_skillbook_name(name)
    with acting_fleet("skillbook label list", WHY, api_key) as (fleet, who):
        listed = operations.list_labels(fleet, who, name)
    labels, head = listed.labels, listed.head
    if as_json:
        print_json({"name": name, "head": head, "labels": labels})
        return
    typer.echo(f"skillbook {name!r}: head at version {head}")
    if not labels:
        typer.echo("no labels (set one: ace-workers skillbook label set NAME LABEL VERSION)")
        return
    table = new_table("label", "version", "behind the head")
    for label, version in labels.items():
        behind = f"{head - version}" if head > version else "at the head"
        table.add_row(Text(printable(label)), str(version), behind)
    print_table(table)


@label_app.command("delete", cls=HelpCommand)
def label_delete(
    name: SkillbookNameArgument,
    label: LabelArgument,
    note: NoteOption = "",
    actor: ActorOption = None,
    as_json: JsonOption = False,
    api_key: ApiKeyOption = None,
) -> None:
    """Remove LABEL (its readers then fail, naming it); the log keeps the move."""
    from ..operations import labels as operations

    check_skillbook_name(name)
    check_label(label)
    with acting_fleet("skillbook label delete", WHY, api_key, actor) as (fleet, who):
        seen = operations.list_labels(fleet, who, name).labels.get(label)
        move = operations.delete_label(fleet, who, name, label, note=note, expect=seen)
    if as_json:
        print_json({"name": name, **move.to_dict()})
    else:
        typer.echo(f"skillbook {name!r}: label {label!r} deleted (it was at version {move.from_version})")


@label_app.command("history", cls=HelpCommand)
def label_history(
    name: SkillbookNameArgument,
    label: Annotated[str | None, typer.Argument(help="Only this label's moves.")] = None,
    limit: Annotated[int, typer.Option(min=1, help="How many moves, newest first.")] = 50,
    as_json: JsonOption = False,
    api_key: ApiKeyOption = None,
) -> None:
    """The label moves of a skillbook (of one label, if given), newest first."""
    from ..operations import labels as operations

    check_skillbook_name(name)
    if label is not None:
        check_label(label)
    with acting_fleet("skillbook label history", WHY, api_key) as (fleet, who):
        moves = operations.label_history(fleet, who, name, label, limit=limit)
    if as_json:
        print_json([move.to_dict() for move in moves])
        return
    _print_moves(moves)


def _print_moves(moves: list[LabelMove]) -> None:
    if not moves:
        typer.echo("no moves logged")
        return
    table = new_table("time", "label", "from", "to", "actor", "note", wrap=("note",))
    for move in moves:
        # Text, not str: what was read from Redis is never read as markup.
        table.add_row(
            move.time,
            Text(printable(move.label)),
            "-" if move.from_version is None else str(move.from_version),
            "deleted" if move.to_version is None else str(move.to_version),
            Text(printable(move.actor)),
            Text(printable(move.note)),
        )
    print_table(table)
