"""The nightly commands of ``ace-workers``: beat, and nightly add / run / report."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from ..distributed.ops.errors import NightlyBusy, NightlyStalled
from ..distributed.settings import env_name
from .help import HelpCommand, HelpGroup
from .inputs import scan_inputs, stream_inputs
from .options import JsonOption, check_skillbook_name, redis_settings
from .output import console, err_console, print_json
from .service import open_service, require_workers

if TYPE_CHECKING:
    from ..distributed.ops.nightly import NightlyReport

__all__ = ["beat_command", "nightly_app"]

nightly_app = typer.Typer(
    cls=HelpGroup,
    help="Nightly learning: traces wait in a skillbook's inbox until its nightly run.",
    no_args_is_help=True,
)


def beat_command(
    schedule_file: Annotated[
        Path | None, typer.Option(help="Where beat keeps its last-run times [a file in the temp folder].")
    ] = None,
    loglevel: Annotated[str, typer.Option(help="Celery log level.")] = "INFO",
) -> None:
    """Run celery beat: the reconciler, the retention sweep, and one nightly run per skillbook of
    ACE_NIGHTLY_SKILLBOOKS."""
    settings = redis_settings("beat", "the workers it schedules for read it", kept_embedded=False)
    from ..distributed.ops.nightly import beat_schedule, retention_schedule  # Celery: only when run
    from ..distributed.worker.reconcile import reconcile_schedule

    schedule = {**reconcile_schedule(settings), **beat_schedule(settings), **retention_schedule(settings)}
    path = schedule_file or Path(tempfile.gettempdir()) / f"ace-workers-beat-{settings.queue_prefix}"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open_service(settings, run_workers=False, learn_threads=1) as service:
        service.app.conf.beat_schedule = schedule
        nightly = settings.nightly_skillbook_names()
        err_console.print(
            f"beat: the reconciler every {settings.reconcile_interval_seconds:g} s; the retention sweep "
            f"at {settings.nightly_schedule!r} (UTC); "
            + (
                f"nightly runs of {', '.join(nightly)} at {settings.nightly_schedule!r} (UTC)"
                if nightly
                else f"no nightly runs (set {env_name('nightly_skillbooks')} for them)"
            )
        )
        service.app.Beat(schedule=str(path), loglevel=loglevel).run()


@nightly_app.command("add", cls=HelpCommand)
def add_command(
    traces: Annotated[Path, typer.Argument(help="JSONL file of traces.")],
    skillbook: Annotated[str, typer.Option(help="Name of the skillbook in Redis.")] = "default",
    as_json: JsonOption = False,
) -> None:
    """Append traces to a skillbook's inbox for its next nightly run (nothing is learned now).

    The file is checked as ``enqueue`` checks it (a bad trace names its line, and nothing
    is added), then streamed into the inbox a line at a time.
    """
    check_skillbook_name(skillbook, "--skillbook")
    settings = redis_settings("nightly add", "the inbox lives in a shared Redis")
    scan_inputs(traces, "trace_analyser", settings)
    with open_service(settings, run_workers=False, learn_threads=1) as service:
        added = service.producer.append_to_inbox(stream_inputs(traces, "trace_analyser"), skillbook)
    if as_json:
        print_json({"skillbook": skillbook, "added": added})
    else:
        console.print(f"{added} traces added to the inbox of {skillbook!r}")


@nightly_app.command("run", cls=HelpCommand)
def run_command(
    name: Annotated[str, typer.Argument(help="Skillbook name.")], as_json: JsonOption = False
) -> None:
    """Run the nightly job of one skillbook now, through the running workers, and print its report."""
    check_skillbook_name(name)
    settings = redis_settings("nightly run", "its workers read the inbox there", kept_embedded=False)
    with open_service(settings, run_workers=False, learn_threads=1) as service:
        require_workers(service, "trace_analyser", name)
        try:
            from ..distributed.ops.nightly import NightlyRunner  # Celery: only when the command runs

            report = NightlyRunner(service.producer).run(name, scheduled=False)
        except (NightlyBusy, NightlyStalled) as exc:
            err_console.print(str(exc), style="red", markup=False)
            raise typer.Exit(code=1) from exc
    assert report is not None  # a manual run never skips
    if as_json:
        print_json(report.to_dict())
    else:
        _print_reports([report])
    if report.failed:
        raise typer.Exit(code=1)


@nightly_app.command("report", cls=HelpCommand)
def report_command(
    name: Annotated[str, typer.Argument(help="Skillbook name.")],
    limit: Annotated[int, typer.Option(min=1, help="How many runs, newest first.")] = 5,
    as_json: JsonOption = False,
) -> None:
    """Show the newest nightly run reports of a skillbook and what waits in its inbox."""
    check_skillbook_name(name)
    settings = redis_settings("nightly report", "the reports live in a shared Redis")
    with open_service(settings, run_workers=False, learn_threads=1) as service:
        from ..distributed.ops.nightly import NightlyRunner  # Celery: only when the command runs

        runner = NightlyRunner(service.producer)
        reports, pending = runner.reports(name, limit), runner.pending(name)
    if as_json:
        print_json({"skillbook": name, "pending": pending, "reports": [r.to_dict() for r in reports]})
        return
    if not reports:
        console.print(f"no nightly run of {name!r} yet")
    _print_reports(reports)
    console.print(f"{pending} traces wait in the inbox of {name!r}")


def _print_reports(reports: list[NightlyReport]) -> None:
    for r in reports:
        console.print(
            f"[bold]night {r.night}[/]{' (resumed)' if r.resumed else ''}, finished {r.finished_at[:19]}"
        )
        epochs = f" x {r.epochs} epochs" if r.epochs > 1 else ""
        cancelled = f", {r.cancelled} cancelled" if r.cancelled else ""
        console.print(f"  traces {r.traces}{epochs}: {r.done} done, {r.failed} failed{cancelled}")
        if r.abandoned:
            console.print(
                f"  [red]batch {r.batch_id} abandoned: {escape(r.abandoned)}[/]; its unfinished samples "
                "are dead letters (ace-workers dead-letters retry sends them again)"
            )
        console.print(
            f"  skills {r.skills_before} -> {r.skills_after}: {r.skills_added} added, "
            f"{r.skills_merged} merged, {r.skills_removed} removed"
        )
        console.print(f"  checkpoint v{r.checkpoint_version}")
        phases = ", ".join(f"{phase} {seconds:.1f}" for phase, seconds in r.durations.items())
        console.print(f"  seconds: {phases} (total {sum(r.durations.values()):.1f})")
    for r in reports[:1]:
        for error in r.errors:
            console.print(f"[red]{escape(error)}[/]")  # an error text may hold brackets
        for path in r.files:
            console.print(f"written: {escape(path)}")
