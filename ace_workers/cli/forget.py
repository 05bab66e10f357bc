"""``ace-workers forget``: erase a person's, a session's or one trace's content from the whole fleet."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from ..counts import counted
from .access import ApiKeyOption
from .fleet import acting_fleet
from .options import ActorOption, JsonOption
from .output import err_console, new_table, print_json, print_table

if TYPE_CHECKING:
    from ..distributed.store.erasure_selector import Selector
    from ..operations.forget import ForgetResult

__all__ = ["forget_command"]

WHY = "the traces live in the fleet's shared Redis"


def _progress(line: str) -> None:
    err_console.print(line, markup=False)


def _selector(trace: str | None, sample: str | None, batch: str | None, subject: str | None) -> Selector:
    """The one selector given; BadParameter for none or several, or one that names nothing."""
    from ..distributed.store.erasure_selector import Selector, parse_subject
    from ..distributed.store.errors import InvalidSelectorError

    given = {
        name: value
        for name, value in (("trace", trace), ("sample", sample), ("batch", batch), ("subject", subject))
        if value is not None
    }
    if len(given) != 1:
        raise typer.BadParameter(
            "give exactly one of --trace, --sample, --batch, --subject PATH=VALUE", param_hint="selector"
        )
    ((kind, value),) = given.items()
    try:
        return parse_subject(value) if kind == "subject" else Selector(kind, value)
    except InvalidSelectorError as exc:
        raise typer.BadParameter(str(exc), param_hint=f"--{kind}") from None


def forget_command(
    trace: Annotated[
        str | None, typer.Option("--trace", help="The trace whose trace_id (or id) is this.")
    ] = None,
    sample: Annotated[str | None, typer.Option("--sample", help="The sample whose id is this.")] = None,
    batch: Annotated[str | None, typer.Option("--batch", help="Every sample of this batch.")] = None,
    subject: Annotated[
        str | None,
        typer.Option("--subject", help="The traces whose field PATH holds VALUE: metadata.user_id=alice."),
    ] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="List what matches; erase nothing.")] = False,
    archive_derived: Annotated[
        bool, typer.Option("--archive-derived", help="Archive the skills learned only from these traces.")
    ] = False,
    remove_derived: Annotated[
        bool, typer.Option("--remove-derived", help="Remove the skills learned only from these traces.")
    ] = False,
    wait: Annotated[
        float,
        typer.Option("--wait", min=0, help="Seconds to wait for matched samples still in flight to finish."),
    ] = 600.0,
    history: Annotated[bool, typer.Option("--history", help="List the erasure records instead.")] = False,
    as_json: JsonOption = False,
    actor: ActorOption = None,
    api_key: ApiKeyOption = None,
) -> None:
    """Erase the matched traces from every batch, dead letter, parked step, provenance, change log,
    proposal and report; list (or archive, or remove) the skills learned only from them."""
    from ..operations.forget import forget, forget_history

    if history:
        with acting_fleet("forget", WHY, api_key, actor) as (fleet, principal):
            records = forget_history(fleet, principal)
        _print_history(records, as_json)
        return
    if archive_derived and remove_derived:
        raise typer.BadParameter("give one of --archive-derived and --remove-derived", param_hint="derived")
    selector = _selector(trace, sample, batch, subject)
    action = "archive" if archive_derived else "remove" if remove_derived else "list"
    with acting_fleet("forget", WHY, api_key, actor) as (fleet, principal):
        result = forget(
            fleet,
            principal,
            selector,
            dry_run=dry_run,
            derived_action=action,
            wait_seconds=wait,
            say=_progress,
        )
    if as_json:
        print_json(result.to_dict())
        return
    _print_result(result)


def _print_result(result: ForgetResult) -> None:
    what = result.selector.describe()
    if result.nothing_matched:
        typer.echo(f"nothing matched {what}: nothing to erase (erasure {result.erasure_id})")
        return
    verb = "would erase" if result.dry_run else "erased"
    typer.echo(
        f"{what}: {counted(result.samples, 'sample')} matched; {verb} {counted(result.erased, 'record')}"
    )
    for place, count in result.counts.items():
        if count:
            typer.echo(f"  {place}: {count}")
    for batch_id, count in result.in_flight.items():
        typer.echo(
            f"  in flight: {counted(count, 'sample')} of running batch {batch_id} (forget waits for them)"
        )
    for name, skill_ids in result.derived.items():
        done = {"archive": "archived", "remove": "removed"}.get(
            result.derived_action, "learned only from these"
        )
        if result.dry_run or result.derived_action == "list":
            done = "learned only from these"
        version = result.derived_versions.get(name)
        typer.echo(
            f"  skillbook {name}: {counted(len(skill_ids), 'skill')} {done}: {', '.join(skill_ids)}"
            + (f" (version {version})" if version is not None else "")
        )
        for skill_id in result.derived_skipped.get(name, []):
            typer.echo(f"    {skill_id} is pinned: kept")
    acted = not result.dry_run and result.derived_action != "list"
    for name, proposal_ids in result.derived_proposals.items():
        typer.echo(
            f"  skillbook {name}: {counted(len(proposal_ids), 'pending proposal')} proposed only by these"
            f"{' (rejected)' if acted else ''}: {', '.join(proposal_ids)}"
        )
    if not result.dry_run:
        typer.echo(f"erasure {result.erasure_id} recorded")


def _print_history(records: list[dict[str, object]], as_json: bool) -> None:
    if as_json:
        print_json(records)
        return
    if not records:
        typer.echo("no erasure records")
        return
    table = new_table("erasure", "at", "by", "selector", "samples", "records", wrap=("selector",))
    for record in records:
        selector = record.get("selector")
        counts = record.get("counts")
        table.add_row(
            str(record.get("id", "")),
            str(record.get("at", "")),
            str(record.get("by", "")),
            _shown_selector(selector if isinstance(selector, dict) else {}),
            str(record.get("samples", 0)),
            str(sum(v for v in counts.values() if isinstance(v, int)) if isinstance(counts, dict) else 0),
        )
    print_table(table)


def _shown_selector(selector: dict[str, object]) -> str:
    """A recorded selector as a person wrote it: ``subject metadata.user_id=u1``, ``batch b-1``."""
    if selector.get("path"):
        return f"{selector.get('kind')} {selector['path']}={selector.get('value')}"
    return f"{selector.get('kind')} {selector.get('value')}"
