"""``ace-workers skillbook evaluate``: the agent answers one task set with each of several versions."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Column, Table
from rich.text import Text

from ..counts import counted
from ..distributed.settings import WorkerSettings
from ..distributed.store.errors import (
    ChangelogTrimmedError,
    UnknownLabelError,
    VersionRangeError,
)
from .exit_codes import EXIT_FAILURES
from .models import refuse_unusable_models
from .options import (
    ActorOption,
    JsonOption,
    SkillbookNameArgument,
    actor_or_fail,
    check_label,
    check_skillbook_name,
    require_shared_redis,
    settings_for_model,
)
from .output import console, err_console, print_json, print_table, print_warning, printable
from .service import open_service, store_or_fail

if TYPE_CHECKING:
    from ..distributed.ops.evaluation import EvaluationReport, EvaluationTarget, OnProgress, TaskSet
    from ..distributed.store.store import RedisSkillbookStore

__all__ = [
    "TASKS_HELP",
    "ModelOption",
    "TasksOption",
    "ThreadsOption",
    "evaluate_command",
    "evaluation_settings",
    "evaluation_table",
    "following",
    "read_tasks_option",
]

WHY = "it evaluates the versions of a skillbook stored in a shared Redis"

TASKS_HELP = "JSONL file of tasks: one {question, ground_truth, context?} object a line (as learn reads)."
TasksOption = Annotated[Path | None, typer.Option("--tasks", help=TASKS_HELP)]
ModelOption = Annotated[
    str | None, typer.Option(help="The agent's model: 'sim' or a litellm model string [ACE_AGENT_MODEL].")
]
ThreadsOption = Annotated[int, typer.Option(min=1, help="Tasks answered at once, per version.")]
# Errors naming a version or label the skillbook does not have: a usage error, said in one line.
TARGET_ERRORS = (UnknownLabelError, VersionRangeError, ChangelogTrimmedError)


def read_tasks_option(path: Path) -> TaskSet:
    """The task file of ``--tasks``; a usage error naming the file and line when it cannot be used."""
    from ..distributed.ops.errors import TaskFileError
    from ..distributed.ops.evaluation import read_task_file

    try:
        return read_task_file(path)
    except TaskFileError as exc:
        raise typer.BadParameter(str(exc), param_hint="--tasks") from None


def evaluation_settings(command: str, model: str | None) -> WorkerSettings:
    """The environment's settings (``model`` for the agent), once a shared Redis and the model check out."""
    settings = settings_for_model(model)
    require_shared_redis(settings, command, WHY)
    refuse_unusable_models(settings, roles=("execute",))  # only the agent answers
    return settings


@contextmanager
def following(names: Sequence[str], total: int) -> Iterator[OnProgress]:
    """A progress bar per target on stderr, and the callback that moves them."""
    with Progress(
        TextColumn("[bold]evaluating {task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err_console,
        transient=False,
    ) as progress:
        bars: dict[str, TaskID] = {}

        def advance(name: str, done: int, _total: int) -> None:
            if name not in bars:
                bars[name] = progress.add_task(printable(name), total=total)
            progress.update(bars[name], completed=done)

        yield advance


def evaluation_table(report: EvaluationReport) -> Table:
    """The scores side by side: one column per version, one row per measure."""
    table = Table("", *(Column(header=Text(printable(score.name))) for score in report.scores))

    def row(measure: str, values: Sequence[str]) -> None:
        table.add_row(measure, *values)

    scores = report.scores
    row("version", [str(s.version) for s in scores])
    row("accuracy", [f"{s.accuracy:.1%}" for s in scores])
    row("right", [f"{s.score:g}/{s.total}" for s in scores])
    row("errors", [str(s.errors) for s in scores])
    row("tokens", [f"{s.tokens:,}" for s in scores])
    row("tokens/task", [f"{s.tokens / s.total:,.0f}" for s in scores])
    row("cost", ["-" if s.cost is None else f"${s.cost:.4f}" for s in scores])
    row("seconds", [f"{s.seconds:.1f}" for s in scores])
    return table


def _targets(store: RedisSkillbookStore, versions: list[int], labels: list[str]) -> list[EvaluationTarget]:
    from ..distributed.ops.evaluation import resolve_targets

    try:
        return resolve_targets(store, versions, labels)
    except TARGET_ERRORS as exc:
        raise typer.BadParameter(str(exc)) from None


def evaluate_command(
    name: SkillbookNameArgument,
    tasks: Annotated[Path, typer.Option("--tasks", help=TASKS_HELP)],
    versions: Annotated[
        list[int] | None, typer.Option("--version", min=1, help="A version to evaluate (repeat for more).")
    ] = None,
    labels: Annotated[
        list[str] | None,
        typer.Option("--label", help="A label whose version to evaluate, e.g. prod (repeat for more)."),
    ] = None,
    model: ModelOption = None,
    threads: ThreadsOption = 1,
    actor: ActorOption = None,
    as_json: JsonOption = False,
) -> None:
    """Run the agent with each version over the same tasks; report accuracy and tokens side by side.

    Each version (--version N, or --label NAME for the version the label points at) is
    read as it was and given to the agent exactly as the fleet's execute step builds it
    (ACE_AGENT_MODEL, or --model; the simulated LLM when nothing is configured). Every
    answer is scored against its task's ground truth (exact match, ignoring case and
    spacing). The tasks are redacted first, as the skillbook's tenant redacts its traces
    (ACE_REDACT, or tenant set --redact). Runs in this process; progress goes to stderr.
    The evaluation is recorded in the skillbook's evaluations list. Exit 1 when an agent
    call failed (scored wrong).
    """
    # The evaluation (the store, the agent) loads when a command evaluates, not for --help.
    from ..distributed.ops.evaluation import evaluate_versions, fleet_agent, fleet_redactor

    check_skillbook_name(name)
    if not versions and not labels:
        raise typer.BadParameter("name at least one --version or --label to evaluate")
    label_names = [check_label(label, "--label") for label in labels or []]
    who = actor_or_fail(actor)
    task_set = read_tasks_option(tasks)
    settings = evaluation_settings("skillbook evaluate", model)
    with open_service(settings, run_workers=False, learn_threads=1) as service:
        store = store_or_fail(service, name)
        targets = _targets(store, list(versions or []), label_names)
        agent = fleet_agent(service.runtime, name)
        with following([t.name for t in targets], len(task_set.samples)) as progress:
            report = evaluate_versions(
                store,
                targets,
                task_set,
                agent,
                actor=who,
                redactor=fleet_redactor(service.runtime, name),
                model=settings.agent_model,
                progress=progress,
                threads=threads,
            )
    if as_json:
        print_json(report.to_dict())
    else:
        print_table(evaluation_table(report))
        console.print(
            f"{counted(len(task_set.samples), 'task')} from {task_set.path} ({task_set.digest[:19]}...); "
            f"recorded as evaluation {report.id}",
            markup=False,
        )
    failed = [score for score in report.scores if score.errors]
    for score in failed:
        print_warning(
            f"{score.name}: {counted(score.errors, 'agent call')} failed and were scored wrong; "
            f"first: {score.first_error}"
        )
    if failed:
        raise typer.Exit(code=EXIT_FAILURES)
