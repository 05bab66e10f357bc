"""``ace-workers skillbook why BOOK SKILL_ID``: why a skill exists, with the evidence for it."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ..counts import counted
from ..distributed.store.provenance_scan import DEFAULT_SCAN, FOUND
from ..errors import UnknownSkillError
from .access import ApiKeyOption, principal_of
from .fleet import open_command_fleet
from .options import JsonOption, SkillbookNameArgument, check_skillbook_name
from .output import console, print_json, printable

if TYPE_CHECKING:
    from ..distributed.store.provenance_reader import SkillHistory

__all__ = ["skillbook_why"]

WHY = "skillbooks live in a shared Redis"
_SHOWN_TRACE_CHARS = 400  # of a trace's JSON in the text output (--json has it whole)


def skillbook_why(
    name: SkillbookNameArgument,
    skill_id: Annotated[str, typer.Argument(help="The skill's id, as the skillbook shows it.")],
    scan: Annotated[
        int, typer.Option(min=1, help="How many of the newest versions to search for changes to the skill.")
    ] = DEFAULT_SCAN,
    as_json: JsonOption = False,
    api_key: ApiKeyOption = None,
) -> None:
    """Why a skill exists: its state, where each recent ADD/UPDATE/TAG came from (batch, sample, trace,
    recipe, insight, actor, time) with the trace while its batch is kept, and the versions that changed it."""
    from ..operations.skillbooks import skill_why  # the store loads when the skill is read

    check_skillbook_name(name)
    with open_command_fleet("skillbook why", WHY) as fleet:
        try:
            history = skill_why(fleet, principal_of(fleet, api_key), name, skill_id, scan=scan)
        except UnknownSkillError:
            raise typer.BadParameter(
                f"skillbook {name!r} has no skill {skill_id!r}, and none of its last {scan} versions "
                "touched one (ace-workers skillbook show NAME lists its skills)",
                param_hint="SKILL_ID",
            ) from None
    if as_json:
        print_json(history.to_dict())
        return
    for line in describe_history(history):
        console.print(printable(line), markup=False, highlight=False)


def describe_history(history: SkillHistory) -> list[str]:
    """The lines ``skillbook why`` prints for a skill's history."""
    book = f"skillbook {history.skillbook!r} (version {history.version})"
    lines = [f"skill {history.skill_id} in {book}: {history.state}"]
    if history.skill is not None:
        skill = history.skill
        counts = ", ".join(f"{tag} {skill.get(tag, 0)}" for tag in ("helpful", "harmful", "neutral"))
        lines.append(f"  [{skill.get('section')}] {skill.get('content')} ({counts})")
    totals = ", ".join(f"{kind} {count}" for kind, count in sorted(history.totals.items()))
    lines.append(
        f"occurrences: {sum(history.totals.values())} in all ({totals or 'none recorded'}); "
        f"{len(history.occurrences)} kept, oldest first:"
    )
    for evidence in history.occurrences:
        lines.extend(
            _describe_occurrence(evidence.occurrence, evidence.status, evidence.trace, evidence.sample)
        )
    lines.append(f"changes in the last {counted(history.scanned, 'version')}: {len(history.changes)}")
    for change in history.changes:
        ops = (
            ", ".join(f"{op.type} {op.skill_id or op.section}" for op in change.operations)
            or change.kind.value
        )
        lines.append(f"  v{change.version} {change.time} {ops}  source {json.dumps(change.source or {})}")
    return lines


def _describe_occurrence(occurrence: dict[str, Any], status: str, trace: Any, sample: Any) -> list[str]:
    where = " ".join(
        f"{label} {occurrence[key]}"
        for key, label in (
            ("batch_id", "batch"),
            ("sample_index", "sample"),
            ("sample_id", "sample id"),
            ("epoch", "epoch"),
            ("trace_id", "trace"),
            ("recipe", "recipe"),
        )
        if occurrence.get(key) is not None
    )
    actor = occurrence.get("actor", "unknown actor")
    lines = [
        f"  {occurrence.get('time', '?')} {occurrence.get('operation_type', '?')} by {actor} {where}".rstrip()
    ]
    if occurrence.get("insight"):
        lines.append(f"      insight: {occurrence['insight']}")
    if occurrence.get("merged_from"):
        lines.append(f"      merged from: {', '.join(map(str, occurrence['merged_from']))}")
    if status == FOUND:
        shown = trace if trace is not None else sample
        text = json.dumps(shown, ensure_ascii=False)
        cut = text if len(text) <= _SHOWN_TRACE_CHARS else text[:_SHOWN_TRACE_CHARS] + "..."
        lines.append(f"      {'trace' if trace is not None else 'sample'}: {cut}")
    elif occurrence.get("batch_id"):
        lines.append("      trace: no longer kept (the batch's records expired)")
    return lines
