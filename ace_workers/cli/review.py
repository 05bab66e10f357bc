"""``ace-workers skillbook review ...``: the review policy, and the proposals waiting for a decision."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.text import Text

from ..core.counts import counted
from ..distributed.store.proposals import Proposal, ProposalStatus
from ..distributed.store.review_policy import ReviewPolicy, parse_policy
from ..operations import review as operations
from .access import ApiKeyOption
from .common import (
    ActorOption,
    JsonOption,
    NoteOption,
    SkillbookNameArgument,
    check_skillbook_name,
    print_json,
    print_warning,
    printable,
)
from .fleet import acting_fleet
from .help import HelpCommand, HelpGroup
from .output import new_table, print_table

__all__ = ["review_app"]

review_app = typer.Typer(
    cls=HelpGroup,
    help="Review what learning proposes before it applies: the policy, list, show, approve, reject.",
    no_args_is_help=True,
)

WHY = "skillbooks and their proposals live in a shared Redis"
IdArgument = Annotated[str, typer.Argument(help="The proposal's id (from review list).")]
_STATUSES = [status.value for status in ProposalStatus] + ["all"]


@review_app.command("list", cls=HelpCommand)
def review_list(
    name: SkillbookNameArgument,
    status: Annotated[
        str, typer.Option(help=f"Which proposals: {', '.join(_STATUSES)}.")
    ] = ProposalStatus.PENDING.value,
    limit: Annotated[int, typer.Option(min=1, help="At most this many, oldest first.")] = 100,
    section: Annotated[
        str | None, typer.Option(help="Only proposals with an operation in this section.")
    ] = None,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="Print only the ids, one a line (for scripts).")
    ] = False,
    as_json: JsonOption = False,
    api_key: ApiKeyOption = None,
) -> None:
    """The proposals of a skillbook (the pending ones unless --status says otherwise), oldest first."""
    check_skillbook_name(name)
    if status not in _STATUSES:
        raise typer.BadParameter(f"{status!r}: use {', '.join(_STATUSES)}", param_hint="--status")
    chosen = None if status == "all" else ProposalStatus(status)
    with acting_fleet("skillbook review list", WHY, api_key) as (fleet, who):
        listed = operations.list_proposals(fleet, who, name, status=chosen, section=section, limit=limit)
    proposals = listed.proposals
    if quiet:
        for proposal in proposals:
            typer.echo(proposal.id)
        return
    if as_json:
        print_json({"name": name, "pending": listed.pending, "proposals": [p.to_dict() for p in proposals]})
        return
    typer.echo(f"skillbook {name!r}: {counted(listed.pending, 'pending proposal')}")
    if not proposals:
        return
    table = new_table("id", "status", "created", "source", "operations", wrap=("source", "operations"))
    for proposal in proposals:
        # Text, not str: rich would read markup in a skill's text as styles.
        table.add_row(
            proposal.id,
            proposal.status.value,
            proposal.created_at[:16].replace("T", " "),
            Text(printable(_describe_source(proposal.source))),
            Text(printable(proposal.summary())),
        )
    print_table(table)


@review_app.command("show", cls=HelpCommand)
def review_show(
    name: SkillbookNameArgument,
    proposal_id: IdArgument,
    as_json: JsonOption = False,
    api_key: ApiKeyOption = None,
) -> None:
    """One proposal: its operations, evidence, the skills as it saw them, conflicts now, the decision."""
    check_skillbook_name(name)
    with acting_fleet("skillbook review show", WHY, api_key) as (fleet, who):
        shown = operations.show_proposal(fleet, who, name, proposal_id)
    proposal, conflicts = shown.proposal, shown.conflicts
    if as_json:
        print_json({**proposal.to_dict(full=True), "conflicts": conflicts})
        return
    lines = [
        f"proposal {proposal.id} of skillbook {name!r}: {proposal.status.value} ({proposal.kind.value})",
        f"proposed {proposal.created_at} on version {proposal.base_version}",
        f"source: {_describe_source(proposal.source)}",
        f"reasoning: {proposal.reasoning}",
    ]
    lines += [f"  {op}" for op in proposal.summary().split("; ")]
    lines += [f"insight from: {_describe_source(source)}" for source in proposal.insight_sources]
    for skill_id, image in proposal.base_images.items():
        was = f"[{image.get('section')}] {image.get('content')}" if image else "(absent)"
        lines.append(f"{skill_id} when proposed: {was}")
    decision = proposal.decision
    if decision is not None:
        lines.append(
            f"{proposal.status.value} by {decision.actor} at {decision.time} (version {decision.version})"
            + (f": {decision.note}" if decision.note else "")
        )
    for line in lines:
        typer.echo(printable(line))
    if conflicts:
        print_warning(
            f"conflicts: {', '.join(conflicts)} changed since it was proposed; approve it with "
            "--despite-conflicts, or reject it"
        )


@review_app.command("approve", cls=HelpCommand)
def review_approve(
    name: SkillbookNameArgument,
    proposal_id: IdArgument,
    note: NoteOption = "",
    actor: ActorOption = None,
    despite_conflicts: Annotated[
        bool, typer.Option(help="Apply it though a skill it touches changed since it was proposed.")
    ] = False,
    as_json: JsonOption = False,
    api_key: ApiKeyOption = None,
) -> None:
    """Apply a pending proposal as one new version (refused if decided already, or conflicting)."""
    check_skillbook_name(name)
    with acting_fleet("skillbook review approve", WHY, api_key, actor) as (fleet, who):
        decided = operations.approve_proposal(
            fleet, who, name, proposal_id, note=note, despite_conflicts=despite_conflicts
        )
    _print_decided(name, decided, as_json)


@review_app.command("reject", cls=HelpCommand)
def review_reject(
    name: SkillbookNameArgument,
    proposal_id: IdArgument,
    note: NoteOption = "",
    actor: ActorOption = None,
    as_json: JsonOption = False,
    api_key: ApiKeyOption = None,
) -> None:
    """Reject a pending proposal: nothing of it applies; the decision is logged."""
    check_skillbook_name(name)
    with acting_fleet("skillbook review reject", WHY, api_key, actor) as (fleet, who):
        decided = operations.reject_proposal(fleet, who, name, proposal_id, note=note)
    _print_decided(name, decided, as_json)


@review_app.command("policy", cls=HelpCommand)
def review_policy(
    name: SkillbookNameArgument,
    policy: Annotated[
        str | None,
        typer.Argument(
            help="auto (apply at once), review (every learned change waits), or rules such as "
            "TAG=auto,ADD=review (operations ADD, UPDATE, TAG, REMOVE, CONSOLIDATE; the rest auto). "
            "Omitted: show the policy."
        ),
    ] = None,
    auto_approve_after: Annotated[
        int | None,
        typer.Option(min=2, help="Apply a proposal once this many pending ones carry the same operations."),
    ] = None,
    note: NoteOption = "",
    actor: ActorOption = None,
    as_json: JsonOption = False,
    api_key: ApiKeyOption = None,
) -> None:
    """Show or set which learned changes of a skillbook wait for review."""
    check_skillbook_name(name)
    chosen: ReviewPolicy | None = None
    if policy is not None:
        try:
            chosen = parse_policy(policy, auto_approve_after)
        except ValueError as exc:
            raise typer.BadParameter(str(exc), param_hint="POLICY") from None
    elif auto_approve_after is not None:
        raise typer.BadParameter(
            "give the POLICY the threshold belongs to", param_hint="--auto-approve-after"
        )
    with acting_fleet("skillbook review policy", WHY, api_key, actor) as (fleet, who):
        if chosen is not None:
            shown = operations.set_review_policy(fleet, who, name, chosen, note=note)
        else:
            shown = operations.review_policy(fleet, who, name)
    current, version = shown.policy, shown.version
    if as_json:
        print_json(
            {"name": name, "policy": current.model_dump(), "describe": current.describe(), "version": version}
        )
    elif version is not None:
        typer.echo(f"skillbook {name!r} version {version}: review policy {current.describe()}")
    else:
        typer.echo(f"skillbook {name!r}: review policy {current.describe()}")


def _print_decided(name: str, decided: Proposal, as_json: bool) -> None:
    if as_json:
        print_json({"name": name, **decided.to_dict()})
        return
    decision = decided.decision
    assert decision is not None
    typer.echo(
        printable(
            f"proposal {decided.id} {decided.status.value} by {decision.actor}: skillbook {name!r} "
            f"now version {decision.version}"
        )
    )


def _describe_source(source: dict[str, Any]) -> str:
    return ", ".join(f"{key} {value}" for key, value in source.items()) or "-"
