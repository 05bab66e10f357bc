"""``ace-workers skillbook label promote``: move a label to another's version, if an evaluation says so."""

from __future__ import annotations

from contextlib import nullcontext
from typing import TYPE_CHECKING, Annotated

import typer

from ..distributed.store.errors import UnknownLabelError
from .evaluate import (
    ModelOption,
    TasksOption,
    ThreadsOption,
    evaluation_settings,
    evaluation_table,
    following,
    read_tasks_option,
)
from .exit_codes import EXIT_REFUSED
from .options import (
    ActorOption,
    JsonOption,
    SkillbookNameArgument,
    actor_or_fail,
    check_label,
    check_skillbook_name,
)
from .output import console, print_json, print_table, printable
from .service import open_service, store_or_fail

if TYPE_CHECKING:
    from ..distributed.ops.promotion import PromotionResult

__all__ = ["promote_command"]


def promote_command(
    name: SkillbookNameArgument,
    candidate: Annotated[str, typer.Argument(help="The label whose version to promote, e.g. canary.")],
    target: Annotated[str, typer.Option("--to", help="The label to move, e.g. prod.")],
    if_better: Annotated[
        bool,
        typer.Option(
            "--if-better", help="Evaluate both on --tasks first; move only if the candidate is better."
        ),
    ] = False,
    tasks: TasksOption = None,
    margin: Annotated[
        float,
        typer.Option(
            min=0.0, help="The candidate must beat the target's accuracy by more than this (0 to below 1)."
        ),
    ] = 0.0,
    note: Annotated[str, typer.Option(help="Why, as the label log records it.")] = "",
    model: ModelOption = None,
    threads: ThreadsOption = 1,
    actor: ActorOption = None,
    as_json: JsonOption = False,
) -> None:
    """Move label --to to CANDIDATE's version; with --if-better, only if its accuracy is higher by > --margin.

    With --if-better both versions answer the tasks of --tasks, as skillbook evaluate
    runs them, and the target moves only when accuracy(candidate) - accuracy(target) >
    --margin, strictly: a tie, or a gain of exactly the margin, is refused (exit 4) and
    the target stays where it is. A target label not set yet takes the candidate. The
    move is made only if the target still points where it did when the evaluation
    began, and the label log records it with the evaluation; every evaluation, refused
    ones too, is recorded in the skillbook's evaluations list. Without --if-better the
    label moves unconditionally (and is logged).
    """
    # The evaluation and the promotion gate load when a label is promoted, not for --help.
    from ..distributed.ops.evaluation import fleet_agent, fleet_redactor
    from ..distributed.ops.promotion import PromotionDecision, promote_label

    check_skillbook_name(name)
    check_label(candidate, "CANDIDATE")
    check_label(target, "--to")
    who = actor_or_fail(actor)
    if candidate == target:
        raise typer.BadParameter(f"CANDIDATE and --to are both {target!r}: name two labels")
    if margin >= 1.0:
        raise typer.BadParameter(
            f"{margin:g} is a whole share of the tasks or more: use 0 to below 1", param_hint="--margin"
        )
    if if_better and tasks is None:
        raise typer.BadParameter(
            "--if-better evaluates on a task file: give --tasks FILE", param_hint="--tasks"
        )
    if tasks is not None and not if_better:
        raise typer.BadParameter("--tasks is used with --if-better only", param_hint="--tasks")
    task_set = read_tasks_option(tasks) if tasks is not None else None
    settings = evaluation_settings("skillbook label promote", model)
    with open_service(settings, run_workers=False, learn_threads=1) as service:
        store = store_or_fail(service, name)
        agent = fleet_agent(service.runtime, name) if task_set is not None else None
        redactor = fleet_redactor(service.runtime, name) if task_set is not None else None
        # Progress bars only when there is an evaluation to follow.
        bars = (
            following([candidate, target], len(task_set.samples))
            if task_set is not None
            else nullcontext(None)
        )
        with bars as progress:
            try:
                result = promote_label(
                    store,
                    candidate,
                    target,
                    actor=who,
                    note=note,
                    if_better=if_better,
                    tasks=task_set,
                    agent=agent,
                    redactor=redactor,
                    margin=margin,
                    model=settings.agent_model,
                    progress=progress,
                    threads=threads,
                )
            except UnknownLabelError as exc:
                raise typer.BadParameter(str(exc), param_hint="CANDIDATE") from None
    if as_json:
        print_json(result.to_dict())
    else:
        _print_result(result)
    if result.decision is PromotionDecision.REFUSED:
        raise typer.Exit(code=EXIT_REFUSED)


def _print_result(result: PromotionResult) -> None:
    from ..distributed.ops.promotion import PromotionDecision

    if result.evaluation is not None:
        print_table(evaluation_table(result.evaluation))
    where = f"skillbook {result.skillbook!r}"
    before = "not set" if result.target_version is None else f"version {result.target_version}"
    if result.decision is PromotionDecision.PROMOTED:
        said = (
            f"promoted: label {result.target!r} of {where} moved from {before} to version "
            f"{result.candidate_version} ({result.candidate!r}): {result.reason}"
        )
    elif result.decision is PromotionDecision.REFUSED:
        said = (
            f"refused: label {result.target!r} of {where} stays at {before}; {result.reason} "
            "(the evaluation is recorded)"
        )
    else:
        said = f"unchanged: {result.reason}"
    console.print(printable(said), markup=False)
