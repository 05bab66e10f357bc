"""``ace-workers skillbook review ...``: the review policy, and the proposals waiting for a decision."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.text import Text

from ..counts import counted
from ..distributed.store.review_names import DUPLICATE_MODES, POLICY_SUBJECTS, ProposalStatus
from .access import ApiKeyOption
from .fleet import acting_fleet
from .help import HelpCommand, HelpGroup
from .options import ActorOption, JsonOption, NoteOption, SkillbookNameArgument, check_skillbook_name
from .output import new_table, print_json, print_table, print_warning, printable

if TYPE_CHECKING:
    from ..distributed.store.proposals import Proposal
    from ..distributed.store.review_policy import ReviewPolicy
    from ..operations.review import DecisionOutcome, ProposalFilter

__all__ = ["review_app"]

review_app = typer.Typer(
    cls=HelpGroup,
    help="Review what learning proposes before it applies: the policy, list, show, approve, reject.",
    no_args_is_help=True,
)

WHY = "skillbooks and their proposals live in a shared Redis"
IdArgument = Annotated[str, typer.Argument(help="The proposal's id (from review list).")]
IdsArgument = Annotated[
    list[str] | None, typer.Argument(help="The proposals' ids (from review list); or give --all.")
]
AllOption = Annotated[
    bool, typer.Option("--all", help="Every pending proposal (narrowed by --section, --op, --duplicates).")
]
SectionOption = Annotated[str | None, typer.Option(help="Only proposals with an operation in this section.")]
OperationOption = Annotated[
    str | None,
    typer.Option(
        "--op", help=f"Only proposals with an operation of this kind: {', '.join(POLICY_SUBJECTS)}."
    ),
]
DuplicatesOption = Annotated[
    bool,
    typer.Option("--duplicates", help="Only proposals restating active skills (approving changes nothing)."),
]
_STATUSES = [status.value for status in ProposalStatus] + ["all"]


@review_app.command("list", cls=HelpCommand)
def review_list(
    name: SkillbookNameArgument,
    status: Annotated[
        str, typer.Option(help=f"Which proposals: {', '.join(_STATUSES)}.")
    ] = ProposalStatus.PENDING.value,
    limit: Annotated[int, typer.Option(min=1, help="At most this many, oldest first.")] = 100,
    section: SectionOption = None,
    operation: OperationOption = None,
    duplicates: DuplicatesOption = False,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="Print only the ids, one a line (for scripts).")
    ] = False,
    as_json: JsonOption = False,
    api_key: ApiKeyOption = None,
) -> None:
    """The proposals of a skillbook (the pending ones unless --status says otherwise), oldest first."""
    # The store and the operations load when a command runs, not for --help.
    from ..operations import review as operations

    check_skillbook_name(name)
    if status not in _STATUSES:
        raise typer.BadParameter(f"{status!r}: use {', '.join(_STATUSES)}", param_hint="--status")
    chosen = None if status == "all" else ProposalStatus(status)
    picked = _filter(section, operation, duplicates)
    with acting_fleet("skillbook review list", WHY, api_key) as (fleet, who):
        listed = operations.list_proposals(fleet, who, name, status=chosen, limit=limit, picked=picked)
    proposals = listed.proposals
    if quiet:
        for proposal in proposals:
            typer.echo(proposal.id)
        return
    if as_json:
        print_json(
            {
                "name": name,
                "pending": listed.pending,
                "proposals": [
                    {
                        **p.to_dict(),
                        "duplicate_of": listed.duplicates[p.id],
                        "conflicts": listed.conflicts[p.id],
                    }
                    for p in proposals
                ],
            }
        )
        return
    typer.echo(f"skillbook {name!r}: {counted(listed.pending, 'pending proposal')}")
    if not proposals:
        return
    table = new_table(
        "id",
        "status",
        "created",
        "count",
        "source",
        "operations",
        "notes",
        wrap=("source", "operations", "notes"),
    )
    for proposal in proposals:
        # Text, not str: rich would read markup in a skill's text as styles.
        table.add_row(
            proposal.id,
            proposal.status.value,
            proposal.created_at[:16].replace("T", " "),
            str(proposal.count),
            Text(printable(_describe_source(proposal.source))),
            Text(printable(proposal.summary())),
            Text(printable(_notes(listed.duplicates[proposal.id], listed.conflicts[proposal.id]))),
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
    from ..operations import review as operations

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
        f"proposed by {counted(proposal.count, 'write')}"
        + "".join(f"\n  {_describe_source(o.source)}" for o in proposal.occurrences),
        f"reasoning: {proposal.reasoning}",
    ]
    lines += [f"  {op}" for op in proposal.summary().split("; ")]
    lines += [f"insight from: {_describe_source(source)}" for source in proposal.insight_sources]
    for skill_id, image in proposal.base_images.items():
        was = f"[{image.get('section')}] {image.get('content')}" if image else "(absent)"
        lines.append(f"{skill_id} when proposed: {was}")
    if shown.duplicate_of:
        lines.append(f"duplicate of {', '.join(shown.duplicate_of)}: approving it changes nothing")
    decision = proposal.decision
    if decision is not None:
        made = "no new version" if decision.version is None else f"version {decision.version}"
        lines.append(
            f"{proposal.status.value} by {decision.actor} at {decision.time} ({made})"
            + (f": {decision.note}" if decision.note else "")
        )
    for line in lines:
        for part in line.split("\n"):
            typer.echo(printable(part))
    if conflicts:
        print_warning(
            f"conflicts: {', '.join(conflicts)} changed since it was proposed; approve it with "
            "--despite-conflicts, or reject it"
        )


@review_app.command("approve", cls=HelpCommand)
def review_approve(
    name: SkillbookNameArgument,
    proposal_ids: IdsArgument = None,
    every: AllOption = False,
    section: SectionOption = None,
    operation: OperationOption = None,
    duplicates: DuplicatesOption = False,
    note: NoteOption = "",
    actor: ActorOption = None,
    despite_conflicts: Annotated[
        bool, typer.Option(help="Apply it though a skill it touches changed since it was proposed.")
    ] = False,
    as_json: JsonOption = False,
    api_key: ApiKeyOption = None,
) -> None:
    """Apply pending proposals, each as one new version (refused if decided already, or conflicting).

    One that restates active skills changes nothing: it is approved without a new version.
    """
    from ..operations import review as operations

    check_skillbook_name(name)
    ids, picked = _chosen(proposal_ids, every, section, operation, duplicates)
    with acting_fleet("skillbook review approve", WHY, api_key, actor) as (fleet, who):
        outcomes = operations.decide_proposals(
            fleet, who, name, ids, approve=True, note=note, despite_conflicts=despite_conflicts, picked=picked
        )
    _print_outcomes(name, outcomes, as_json, single=ids is not None and len(ids) == 1)


@review_app.command("reject", cls=HelpCommand)
def review_reject(
    name: SkillbookNameArgument,
    proposal_ids: IdsArgument = None,
    every: AllOption = False,
    section: SectionOption = None,
    operation: OperationOption = None,
    duplicates: DuplicatesOption = False,
    note: NoteOption = "",
    actor: ActorOption = None,
    as_json: JsonOption = False,
    api_key: ApiKeyOption = None,
) -> None:
    """Reject pending proposals: nothing of them applies; each decision is logged."""
    from ..operations import review as operations

    check_skillbook_name(name)
    ids, picked = _chosen(proposal_ids, every, section, operation, duplicates)
    with acting_fleet("skillbook review reject", WHY, api_key, actor) as (fleet, who):
        outcomes = operations.decide_proposals(fleet, who, name, ids, approve=False, note=note, picked=picked)
    _print_outcomes(name, outcomes, as_json, single=ids is not None and len(ids) == 1)


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
        typer.Option(min=2, help="Apply a proposal once this many writes proposed the same operations."),
    ] = None,
    duplicates: Annotated[
        str,
        typer.Option(
            help="review: a proposal restating active skills waits like any; reject: it is rejected at once."
        ),
    ] = "review",
    note: NoteOption = "",
    actor: ActorOption = None,
    as_json: JsonOption = False,
    api_key: ApiKeyOption = None,
) -> None:
    """Show or set which learned changes of a skillbook wait for review."""
    from ..distributed.store.review_policy import parse_policy
    from ..operations import review as operations

    check_skillbook_name(name)
    chosen: ReviewPolicy | None = None
    if duplicates not in DUPLICATE_MODES:
        raise typer.BadParameter(
            f"{duplicates!r}: use {' or '.join(DUPLICATE_MODES)}", param_hint="--duplicates"
        )
    if policy is not None:
        try:
            chosen = parse_policy(
                policy, auto_approve_after, "reject" if duplicates == "reject" else "review"
            )
        except ValueError as exc:
            raise typer.BadParameter(str(exc), param_hint="POLICY") from None
    elif auto_approve_after is not None or duplicates != "review":
        raise typer.BadParameter(
            "give the POLICY the setting belongs to", param_hint="--auto-approve-after/--duplicates"
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


def _filter(section: str | None, operation: str | None, duplicates: bool) -> ProposalFilter:
    """The filter the options name; BadParameter naming --op for a kind that is none."""
    from ..operations import review as operations

    kind = operation.strip().upper() if operation is not None else None
    if kind is not None and kind not in POLICY_SUBJECTS:
        raise typer.BadParameter(f"{operation!r}: use one of {', '.join(POLICY_SUBJECTS)}", param_hint="--op")
    return operations.ProposalFilter(section=section, operation=kind, duplicates=duplicates)


def _chosen(
    ids: list[str] | None, every: bool, section: str | None, operation: str | None, duplicates: bool
) -> tuple[list[str] | None, ProposalFilter]:
    """The ids to decide (None: --all) and the filter of --all; BadParameter for a mix or neither."""
    picked = _filter(section, operation, duplicates)
    if every and ids:
        raise typer.BadParameter("give proposal ids or --all, not both", param_hint="--all")
    if not every and not ids:
        raise typer.BadParameter("give one or more proposal ids, or --all", param_hint="PROPOSAL_IDS")
    if not every and picked.narrows:
        raise typer.BadParameter(
            "--section, --op and --duplicates narrow --all; give --all", param_hint="--all"
        )
    return (None if every else ids), picked


def _print_outcomes(name: str, outcomes: list[DecisionOutcome], as_json: bool, *, single: bool) -> None:
    """One line per proposal (JSON: one document); exit with the code of the first refusal, if any.

    One proposal named by id answers as before there were several: its JSON, or its error.
    """
    from ..operations.outcomes import outcome_of

    refused = [o.refused for o in outcomes if o.refused is not None]
    if single and refused:
        raise refused[0]
    if single and as_json and outcomes[0].decided is not None:
        print_json({"name": name, **outcomes[0].decided.to_dict(), "restated": outcomes[0].restated})
    elif as_json:
        print_json(
            {
                "name": name,
                "decided": [{**o.decided.to_dict(), "restated": o.restated} for o in outcomes if o.decided],
                "refused": [
                    {"id": o.proposal_id, "error": outcome_of(o.refused).kind, "message": str(o.refused)}
                    for o in outcomes
                    if o.refused is not None
                ],
            }
        )
    else:
        if not outcomes:
            typer.echo(f"skillbook {name!r}: no pending proposal matches; nothing decided")
        for outcome in outcomes:
            if outcome.decided is not None:
                typer.echo(printable(_decided_line(name, outcome.decided, outcome.restated)))
            else:
                typer.echo(f"error: {printable(outcome.refused)}", err=True)
    if refused:
        raise typer.Exit(outcome_of(refused[0]).exit_code)


def _decided_line(name: str, decided: Proposal, restated: list[str]) -> str:
    decision = decided.decision
    assert decision is not None
    said = f"proposal {decided.id} {decided.status.value} by {decision.actor}: "
    if decision.no_op:
        why = f" (it restates {', '.join(restated)})" if restated else ""
        return said + f"nothing changed{why}; skillbook {name!r} keeps its version (no new version)"
    return said + f"skillbook {name!r} now version {decision.version}"


def _notes(duplicate_of: list[str], conflicts: list[str]) -> str:
    notes = []
    if duplicate_of:
        notes.append(f"duplicate of {', '.join(duplicate_of)}")
    if conflicts:
        notes.append(f"conflicts: {', '.join(conflicts)}")
    return "; ".join(notes) or "-"


def _describe_source(source: dict[str, Any]) -> str:
    return ", ".join(f"{key} {value}" for key, value in source.items()) or "-"
