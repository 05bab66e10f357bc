"""``ace-workers skillbook compare BOOK A B``: live A/B of two labels from what the fleet served.

The counts come from the fleet (distributed/store/outcomes.py): executions each label
served, and of those an environment judged, how many succeeded. Each success rate has
a 95% Wilson interval; overlapping intervals mean no significant difference yet.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from ..distributed.store.label_names import HEAD
from .access import ApiKeyOption, principal_of
from .fleet import open_command_fleet
from .options import JsonOption, SkillbookNameArgument, check_label, check_skillbook_name
from .output import print_json

if TYPE_CHECKING:
    from ..distributed.store.outcomes import LabelComparison, LabelOutcomes

__all__ = ["compare_command", "describe_comparison"]

WHY = "the fleet counts what each label served in the shared Redis"


def _label(value: str) -> str:
    return value if value == HEAD else check_label(value)


def compare_command(
    name: SkillbookNameArgument,
    first: Annotated[str, typer.Argument(metavar="LABEL_A", help="A label (or 'head').", callback=_label)],
    second: Annotated[
        str, typer.Argument(metavar="LABEL_B", help="Another label (or 'head').", callback=_label)
    ],
    as_json: JsonOption = False,
    api_key: ApiKeyOption = None,
) -> None:
    """Success rate of two labels' live executions, with 95% confidence intervals."""
    from ..operations.skillbooks import compare_skillbook_labels  # the skillbook model: only when run

    check_skillbook_name(name)
    with open_command_fleet("skillbook compare", WHY) as fleet:
        comparison = compare_skillbook_labels(fleet, principal_of(fleet, api_key), name, first, second)
    if as_json:
        print_json(comparison.to_dict())
        return
    for line in describe_comparison(comparison):
        typer.echo(line)


def describe_comparison(comparison: LabelComparison) -> list[str]:
    """The comparison in lines: one per label, then the verdict."""
    lines = [_describe(outcomes) for outcomes in (comparison.a, comparison.b)]
    a, b = comparison.a.label, comparison.b.label
    if not comparison.a.judged or not comparison.b.judged:
        lines.append(f"not enough data: {a if not comparison.a.judged else b} has no judged execution yet")
    elif comparison.overlap:
        lines.append(f"the intervals overlap: no significant difference between {a} and {b} yet")
    else:
        lines.append(f"{comparison.better} is significantly better (the 95% intervals do not overlap)")
    return lines


def _describe(outcomes: LabelOutcomes) -> str:
    interval = outcomes.interval()
    if interval is None or outcomes.success_rate is None:
        return f"{outcomes.label}: served {outcomes.served}, none judged"
    low, high = interval
    return (
        f"{outcomes.label}: served {outcomes.served}, {outcomes.success} of {outcomes.judged} judged "
        f"succeeded: {outcomes.success_rate:.1%} (95% CI {low:.1%} to {high:.1%})"
    )
