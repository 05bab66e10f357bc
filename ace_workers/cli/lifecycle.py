"""``ace-workers skillbook pin|unpin|archive|restore|archived|prune``: a skill's lifecycle by hand.

A pinned skill is never removed, merged or archived (by the SkillManager,
deduplication or pruning) until it is unpinned; an archived one is out of the
prompt, kept, and restorable. Each change is one version in the change log,
with who did it (--actor) and why (--note), so diff and rollback see it.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.text import Text

from ..core.lifecycle_rules import StaleRule
from ..counts import counted
from ..distributed.store.errors import StaleHistoryError
from .access import ApiKeyOption
from .fleet import acting_fleet
from .options import ActorOption, JsonOption, NoteOption, SkillbookNameArgument, check_skillbook_name
from .output import new_table, print_json, print_table, printable

__all__ = [
    "skillbook_pin",
    "skillbook_unpin",
    "skillbook_archive",
    "skillbook_restore",
    "skillbook_archived",
    "skillbook_prune",
]

WHY = "skillbooks live in a shared Redis"
DEFAULT_STALE_DAYS = 30.0

SkillIdsArgument = Annotated[list[str], typer.Argument(help="The ids of the skills (one or more).")]

# What each change says it did, and about the skills already in that state.
_DONE = {"pin": "pinned", "unpin": "unpinned", "archive": "archived", "restore": "restored"}
_ALREADY = {
    "pin": "already pinned",
    "unpin": "not pinned",
    "archive": "already archived",
    "restore": "not archived",
}


def _change(
    action: str,
    name: str,
    skill_ids: list[str],
    note: str,
    actor: str | None,
    as_json: bool,
    api_key: str | None,
) -> None:
    """Run one lifecycle change and print what it did."""
    from ..operations import lifecycle as operations  # the store loads when a command runs

    check_skillbook_name(name)
    with acting_fleet(f"skillbook {action}", WHY, api_key, actor) as (fleet, who):
        result = operations.change_skills(fleet, who, name, action, skill_ids, note=note)
    if as_json:
        print_json({"name": name, "actor": who.name, **result.to_dict()})
        return
    if result.changed:
        typer.echo(
            printable(
                f"skillbook {name!r} version {result.version}: {_DONE[action]} {', '.join(result.changed)}"
            )
        )
    else:
        typer.echo(printable(f"nothing changed (skillbook {name!r} stays at version {result.version})"))
    if result.unchanged:
        typer.echo(printable(f"{_ALREADY[action]}: {', '.join(result.unchanged)}"))


def skillbook_pin(
    name: SkillbookNameArgument,
    skill_ids: SkillIdsArgument,
    note: NoteOption = "",
    actor: ActorOption = None,
    as_json: JsonOption = False,
    api_key: ApiKeyOption = None,
) -> None:
    """Pin skills: never removed, merged or archived (by learning, dedup or prune) until unpinned."""
    _change("pin", name, skill_ids, note, actor, as_json, api_key)


def skillbook_unpin(
    name: SkillbookNameArgument,
    skill_ids: SkillIdsArgument,
    note: NoteOption = "",
    actor: ActorOption = None,
    as_json: JsonOption = False,
    api_key: ApiKeyOption = None,
) -> None:
    """Unpin skills: learning, dedup and prune may act on them again."""
    _change("unpin", name, skill_ids, note, actor, as_json, api_key)


def skillbook_archive(
    name: SkillbookNameArgument,
    skill_ids: SkillIdsArgument,
    note: NoteOption = "",
    actor: ActorOption = None,
    as_json: JsonOption = False,
    api_key: ApiKeyOption = None,
) -> None:
    """Archive skills: out of the prompt and the count, kept and restorable (a pinned one is refused)."""
    _change("archive", name, skill_ids, note, actor, as_json, api_key)


def skillbook_restore(
    name: SkillbookNameArgument,
    skill_ids: SkillIdsArgument,
    note: NoteOption = "",
    actor: ActorOption = None,
    as_json: JsonOption = False,
    api_key: ApiKeyOption = None,
) -> None:
    """Bring archived skills back into the prompt."""
    _change("restore", name, skill_ids, note, actor, as_json, api_key)


def skillbook_archived(
    name: SkillbookNameArgument, as_json: JsonOption = False, api_key: ApiKeyOption = None
) -> None:
    """List the archived skills of a skillbook: when, by whom and why each was archived."""
    from ..operations import lifecycle as operations  # the store loads when a command runs

    check_skillbook_name(name)
    with acting_fleet("skillbook archived", WHY, api_key) as (fleet, who):
        skills = operations.archived_skills(fleet, who, name)
    if as_json:
        print_json(
            [
                {"id": s.id, "section": s.section, "content": s.content, "archive_info": s.archive_info}
                for s in skills
            ]
        )
        return
    if not skills:
        typer.echo(printable(f"skillbook {name!r} has no archived skills"))
        return
    table = new_table("id", "section", "archived at", "by", "reason", "content", wrap=("reason", "content"))
    for skill in skills:
        info = skill.archive_info or {}
        # Text, not str: rich would read markup in what a person or an LLM wrote.
        table.add_row(
            *(
                Text(printable(value))
                for value in (
                    skill.id,
                    skill.section,
                    info.get("at", ""),
                    info.get("by", ""),
                    info.get("reason", ""),
                    skill.content,
                )
            )
        )
    print_table(table)


def skillbook_prune(
    name: SkillbookNameArgument,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="List the stale skills; change nothing.")
    ] = False,
    apply: Annotated[bool, typer.Option("--apply", help="Archive the stale skills, in one version.")] = False,
    days: Annotated[
        float | None,
        typer.Option(
            min=0.001,
            help="Stale: not tagged or updated for this many days [30 unless --batches is given].",
        ),
    ] = None,
    batches: Annotated[
        int | None,
        typer.Option(min=1, help="Stale: not tagged or updated by the last this many batches."),
    ] = None,
    note: NoteOption = "",
    actor: ActorOption = None,
    as_json: JsonOption = False,
    api_key: ApiKeyOption = None,
) -> None:
    """Find skills nobody uses any more (never pinned ones) and, with --apply, archive them."""
    from ..operations import lifecycle as operations  # the store loads when a command runs

    check_skillbook_name(name)
    if dry_run == apply:
        raise typer.BadParameter("give exactly one of --dry-run (list) and --apply (archive)")
    rule = StaleRule(
        days=days if days is not None or batches is not None else DEFAULT_STALE_DAYS, batches=batches
    )
    with acting_fleet("skillbook prune", WHY, api_key, actor if apply else None) as (fleet, who):
        try:
            if dry_run:
                pruned = operations.plan_prune(fleet, who, name, rule)
            else:
                pruned = operations.prune(fleet, who, name, rule, note=note)
        except StaleHistoryError as exc:  # the change log no longer holds that many batches
            raise typer.BadParameter(str(exc), param_hint="--batches") from None
    plan, result = pruned.plan, pruned.applied
    if as_json:
        data: dict[str, Any] = {"name": name, "dry_run": dry_run, **plan.to_dict()}
        if result is not None:
            data.update(
                actor=who.name, archived=result.changed, skipped=result.skipped, version=result.version
            )
        print_json(data)
        return
    for candidate in plan.candidates:
        line = f"{candidate.skill_id} [{candidate.section}] {candidate.content}: {candidate.reason}"
        typer.echo(printable(line))
    for skill_id, why in (result.skipped if result is not None else {}).items():
        typer.echo(printable(f"left {skill_id} active: {why}"))
    if result is None:
        typer.echo(
            f"{counted(len(plan.candidates), 'stale skill')} in skillbook {printable(repr(name))} at version "
            f"{plan.version}; nothing changed (--apply archives them)"
        )
    elif result.changed:
        typer.echo(
            f"skillbook {printable(repr(name))} version {result.version}: archived "
            f"{counted(len(result.changed), 'stale skill')} (skillbook archived lists them, restore brings "
            "one back)"
        )
    else:
        typer.echo(f"nothing archived (skillbook {printable(repr(name))} stays at version {result.version})")
