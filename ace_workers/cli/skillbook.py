"""``ace-workers skillbook ...``: inspect and manage the skillbooks stored in Redis."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from ..counts import counted
from ..distributed.settings import DEDUP_OFF, DEDUP_PROVIDERS, WorkerSettings
from ..distributed.store.errors import SkillbookExistsError
from ..errors import AceError, SkillbookFormatError
from .access import ApiKeyOption, principal_of
from .fleet import acting_fleet, open_command_fleet
from .help import HelpCommand, HelpGroup
from .options import (
    ActorOption,
    JsonOption,
    NoteOption,
    SkillbookNameArgument,
    check_output_path,
    check_skillbook_name,
    redis_settings,
    require_shared_redis,
)
from .output import (
    console,
    describe_fill,
    new_table,
    print_json,
    print_table,
    print_warning,
    printable,
    write_skillbook_files,
)
from .service import open_service, store_or_fail

__all__ = ["skillbook_app"]

# Its commands are registered here; root.py adds those of other modules (review, label, lifecycle,
# why, compare, evaluate) in --help order.
skillbook_app = typer.Typer(
    cls=HelpGroup, help="Inspect and manage skillbooks stored in Redis.", no_args_is_help=True
)

WHY = "skillbooks live in a shared Redis"


@skillbook_app.command("list", cls=HelpCommand)
def skillbook_list(as_json: JsonOption = False, api_key: ApiKeyOption = None) -> None:
    """List the skillbooks in Redis (with --json: each with its version and active skills).

    A record that cannot be read is one line on stderr naming its key (exit 1); the others are listed.
    """
    # The skillbook model, the store and the operations load when a command runs, not for --help.
    from ..operations.skillbooks import list_skillbooks_readable

    with open_command_fleet("skillbook list", WHY) as fleet:
        listing = list_skillbooks_readable(fleet, principal_of(fleet, api_key), summarize=as_json)
    if as_json:
        print_json([dataclasses.asdict(summary) for summary in listing.summaries])
    else:
        for name in listing.names:
            typer.echo(printable(name))
    for problem in listing.unreadable:
        print_warning(f"unreadable: {printable(problem)}")
    if listing.unreadable:
        raise typer.Exit(1)


@skillbook_app.command("show", cls=HelpCommand)
def skillbook_show(
    name: SkillbookNameArgument, as_json: JsonOption = False, api_key: ApiKeyOption = None
) -> None:
    """Print a skillbook as markdown, with its version and how full it is."""
    from ..operations.skillbooks import show_skillbook

    check_skillbook_name(name)
    with open_command_fleet("skillbook show", WHY) as fleet:
        shown = show_skillbook(fleet, principal_of(fleet, api_key), name)
    if as_json:
        print_json(shown.to_dict())
        return
    version, book, fill, pending = shown.version, shown.book, shown.fill, shown.pending_proposals
    console.print(
        f"skillbook {name!r} at version {version}: {fill['active_skills']} of {fill['max_skills']} "
        "active skills"
    )
    full = describe_fill(name, fill)
    if full:
        print_warning(full)
    if pending:
        wait = "waits" if pending == 1 else "wait"
        print_warning(
            f"{counted(pending, 'proposal')} {wait} for review: ace-workers skillbook review list {name}"
        )
    # No highlighting: rich's highlighter regexes take time quadratic in a long run of digits or
    # letters (a 20,000-character skill took 20 s); stored text is shown as it is.
    console.print(printable(book.as_markdown(), keep_lines=True), markup=False, highlight=False)


@skillbook_app.command("import", cls=HelpCommand)
def skillbook_import(
    file: Annotated[Path, typer.Argument(help="A skillbook JSON file: ours or the reference framework's.")],
    name: Annotated[str, typer.Argument(help="The skillbook in Redis to load it into.")],
    replace: Annotated[
        bool, typer.Option(help="Replace an existing skillbook (as a new version; rollback undoes it).")
    ] = False,
    as_json: JsonOption = False,
    api_key: ApiKeyOption = None,
) -> None:
    """Load a skillbook file into Redis as one new version."""
    from ..core.skillbook import Skillbook
    from ..operations.skillbooks import import_skillbook

    check_skillbook_name(name)
    try:
        book = Skillbook.load_from_file(file)
    except SkillbookFormatError as exc:
        raise typer.BadParameter(str(exc), param_hint="FILE") from None
    with open_command_fleet("skillbook import", WHY) as fleet:
        try:
            version = import_skillbook(
                fleet, principal_of(fleet, api_key), name, book, replace=replace, file=str(file)
            )
        except SkillbookExistsError as exc:
            raise typer.BadParameter(
                f"skillbook {name!r} exists (version {exc.version}); pass --replace to replace it",
                param_hint="NAME",
            ) from None
    if as_json:
        print_json({"name": name, "file": str(file), "skills": len(book), "version": version})
    else:
        typer.echo(f"{counted(len(book), 'skill')} from {file} imported into {name!r} as version {version}")


@skillbook_app.command("diff", cls=HelpCommand)
def skillbook_diff(
    name: SkillbookNameArgument,
    from_version: Annotated[int, typer.Argument(min=0, help="The older version.")],
    to_version: Annotated[int, typer.Argument(min=0, help="The newer version.")],
    as_json: JsonOption = False,
) -> None:
    """What changed in a skillbook between two versions: skills added, removed and changed."""
    from ..distributed.store.change_summary import describe_changes

    check_skillbook_name(name)
    if from_version > to_version:
        raise typer.BadParameter(
            f"V1 ({from_version}) is after V2 ({to_version}): give the older version first"
        )
    with open_service(redis_settings("skillbook diff", WHY), run_workers=False, learn_threads=1) as service:
        store = store_or_fail(service, name)
        try:
            changes = describe_changes(store.diff(from_version, to_version))
        except ValueError as exc:
            raise typer.BadParameter(str(exc)) from None
    if as_json:
        print_json({"name": name, "from_version": from_version, "to_version": to_version, **changes})
        return
    typer.echo(
        f"skillbook {name!r} from version {from_version} to {to_version}: {len(changes['added'])} added, "
        f"{len(changes['removed'])} removed, {len(changes['changed'])} changed"
    )
    for skill in changes["added"]:
        typer.echo(printable(f"+ {skill['id']} [{skill['section']}] {skill['content']}"))
    for skill in changes["removed"]:
        typer.echo(printable(f"- {skill['id']} [{skill['section']}] {skill['content']}"))
    for change in changes["changed"]:
        for field_name, (old, new) in change["fields"].items():
            typer.echo(printable(f"~ {change['id']} {field_name}: {old!r} -> {new!r}"))


@skillbook_app.command("export", cls=HelpCommand)
def skillbook_export(
    name: SkillbookNameArgument,
    out: Annotated[Path, typer.Option(help="JSON file to write (atomically).")],
    markdown: Annotated[Path | None, typer.Option(help="Also write markdown here.")] = None,
    as_json: JsonOption = False,
    api_key: ApiKeyOption = None,
) -> None:
    """Write a skillbook from Redis to a JSON file in the reference format: export NAME --out FILE."""
    from ..operations.skillbooks import export_skillbook

    check_skillbook_name(name)
    check_output_path(out, "--out")
    check_output_path(markdown, "--markdown")
    with open_command_fleet("skillbook export", WHY) as fleet:
        version, book = export_skillbook(fleet, principal_of(fleet, api_key), name)
    write_skillbook_files(book, out, markdown)
    if as_json:
        written = {"out": str(out), "markdown": str(markdown) if markdown else None}
        print_json({"name": name, "version": version, "skills": len(book), "written": written})
    else:
        typer.echo(f"{counted(len(book), 'skill')} written to {out}")


@skillbook_app.command("history", cls=HelpCommand)
def skillbook_history(
    name: SkillbookNameArgument,
    limit: Annotated[int, typer.Option(min=1, help="How many versions, newest first.")] = 20,
    as_json: JsonOption = False,
) -> None:
    """The latest versions of a skillbook: what changed, from which sample."""
    from ..distributed.store.change_summary import change_to_json, consolidation_label

    check_skillbook_name(name)
    with open_service(
        redis_settings("skillbook history", WHY), run_workers=False, learn_threads=1
    ) as service:
        history = store_or_fail(service, name).history(limit=limit)
        if as_json:
            print_json([change_to_json(change) for change in history])
            return
        table = new_table("version", "base", "operations", "source", wrap=("operations", "source"))
        for change in history:
            ops = ", ".join(
                [f"{op.type} {op.skill_id or op.section}" for op in change.operations]
                + [consolidation_label(op) for op in change.consolidation]
            )
            ops = ops or f"({change.kind.value})"
            # Text, not str: rich would read markup in a section name as styles.
            table.add_row(
                str(change.version),
                str(change.base_version),
                Text(printable(ops)),
                Text(json.dumps(change.source or {})),
            )
        print_table(table)


@skillbook_app.command("dedup", cls=HelpCommand)
def skillbook_dedup(
    name: SkillbookNameArgument,
    provider: Annotated[
        str | None,
        typer.Option(
            help="sentence_transformers or litellm [ACE_DEDUP_PROVIDER, else sentence_transformers]."
        ),
    ] = None,
    dry_run: Annotated[bool, typer.Option(help="Print the planned operations; change nothing.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Consolidate near-duplicate skills (merge, delete, keep, update) as one new version."""
    from ..distributed.store.change_summary import consolidation_label
    from ..distributed.store.review_writes import ProposeOutcome
    from ..distributed.store.write_scope import dedup_write_scope, write_scope

    check_skillbook_name(name)
    settings = WorkerSettings.from_env()
    chosen = provider or (settings.dedup_provider if settings.dedup_provider != DEDUP_OFF else None)
    chosen = chosen or "sentence_transformers"
    if chosen not in DEDUP_PROVIDERS or chosen == DEDUP_OFF:
        raise typer.BadParameter(f"--provider {chosen!r}: use sentence_transformers or litellm")
    require_shared_redis(settings, "skillbook dedup", WHY)
    with open_service(settings, run_workers=False, learn_threads=1) as service:
        store = store_or_fail(service, name)
        try:
            manager = service.runtime.deduplicator(name, provider=chosen)
        except AceError as exc:
            raise typer.BadParameter(str(exc)) from exc
        book = service.runtime.skillbook(name)
        before = store.version()
        if dry_run:
            planned = [op.to_dict() for op in manager.plan(book).operations]
            if as_json:
                print_json({"name": name, "dry_run": True, "version": before, "planned": planned})
                return
            for op in planned:
                console.print(printable(consolidation_label(op)), markup=False)
            typer.echo(f"{counted(len(planned), 'operation')} planned; nothing changed")
            return
        # Planned again if a worker removes or rewrites a named skill before it applies.
        with write_scope(dedup_write_scope({"command": "skillbook dedup"})):
            report = manager.deduplicate(book)
        after = book.refresh() if report.changed else before
    # Under a review policy (CONSOLIDATE=review) the batch waits as a proposal instead (unless
    # enough agreeing proposals auto-approved it).
    outcome = book.last_result
    proposed: ProposeOutcome | None = None
    if isinstance(outcome, ProposeOutcome) and outcome.auto_approved_version is None:
        proposed = outcome
    if as_json:
        print_json(
            {
                "name": name,
                "dry_run": False,
                "version": after,
                "applied": report.to_dict(),
                "proposal": proposed.proposal_id if proposed is not None else None,
            }
        )
    elif proposed is not None:
        typer.echo(
            f"skillbook {name!r}: the consolidation waits for review as proposal {proposed.proposal_id} "
            f"(ace-workers skillbook review show {name} {proposed.proposal_id})"
        )
    elif not report.changed:
        typer.echo(f"0 operations planned; nothing changed (skillbook {name!r}, version {before})")
    else:
        typer.echo(f"skillbook {name!r} version {after}: {report.summary()}")


@skillbook_app.command("rollback", cls=HelpCommand)
def skillbook_rollback(
    name: SkillbookNameArgument,
    to_version: Annotated[int, typer.Option("--to", min=0, help="The version to restore.")],
    note: NoteOption = "",
    actor: ActorOption = None,
    as_json: JsonOption = False,
    api_key: ApiKeyOption = None,
) -> None:
    """Restore a skillbook to an earlier version, as a new version (history is kept)."""
    from ..operations.history import head_version, rollback

    check_skillbook_name(name)
    with acting_fleet("skillbook rollback", WHY, api_key, actor) as (fleet, who):
        # No confirmation page here: the rollback expects the head as it is now (operations/expect.py).
        head = head_version(fleet, who, name)
        done = rollback(fleet, who, name, to_version, note=note, via="cli", expect=head)
    if as_json:
        print_json({"name": name, "restored_version": to_version, "version": done.version})
    else:
        typer.echo(f"skillbook {name!r} rolled back to version {to_version}, now version {done.version}")
