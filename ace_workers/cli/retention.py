"""``ace-workers retention ...``: what is kept of each kind of record, and the sweep on demand."""

from __future__ import annotations

from typing import Annotated

import typer

from ..counts import counted
from .access import ApiKeyOption, principal_of
from .fleet import open_command_fleet
from .help import HelpCommand, HelpGroup
from .options import JsonOption
from .output import new_table, print_json, print_table

__all__ = ["retention_app"]

retention_app = typer.Typer(
    cls=HelpGroup,
    help="How long each kind of record is kept (dead letters, proposals, audit, ...), and the sweep.",
    no_args_is_help=True,
)

WHY = "the records live in a shared Redis"
# How a count of each kind reads in a sentence.
_NOUNS = {
    "dead_letters": ("dead letter", None),
    "decided_proposals": ("decided proposal", None),
    "audit": ("audit entry", "audit entries"),
    "label_log": ("label move", None),
    "evaluations": ("evaluation report", None),
    "erasures": ("erasure record", None),
}


@retention_app.command("show", cls=HelpCommand)
def retention_show(as_json: JsonOption = False, api_key: ApiKeyOption = None) -> None:
    """List each kind of record: its setting, the setting's value, what it keeps, what enforces it."""
    from ..operations.retention import show_retention, shown_number

    with open_command_fleet("retention show", WHY) as fleet:
        rows = show_retention(fleet, principal_of(fleet, api_key))
    if as_json:
        print_json([row.to_dict() for row in rows])
        return
    table = new_table("kind", "setting", "value", "kept", "enforced by", wrap=("kept", "enforced by"))
    for row in rows:
        table.add_row(row.kind, row.setting, shown_number(row.value), row.kept, row.enforced_by)
    print_table(table)


@retention_app.command("sweep", cls=HelpCommand)
def retention_sweep(
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Count what would go; remove nothing.")] = False,
    as_json: JsonOption = False,
    api_key: ApiKeyOption = None,
) -> None:
    """Remove now what is past its bound, as the nightly sweep does; one line per kind."""
    from ..operations.retention import sweep_retention

    with open_command_fleet("retention sweep", WHY) as fleet:
        counts = sweep_retention(fleet, principal_of(fleet, api_key), dry_run=dry_run)
    if as_json:
        print_json({"dry_run": dry_run, "removed": counts})
        return
    verb = "would be removed" if dry_run else "removed"
    for kind, count in counts.items():
        typer.echo(f"{kind}: {counted(count, *_NOUNS[kind])} {verb}")
