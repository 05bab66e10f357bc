"""``ace-workers enqueue``: send a JSONL file, or recorded agent sessions, as one batch to running workers."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated

import typer

from ..distributed.settings import WorkerSettings
from ..distributed.tenancy.errors import InvalidApiKeyError
from ..errors import InvalidSettingError
from .inputs import scan_inputs
from .options import CanaryOption, JsonOption, check_recipe, check_skillbook_ref, require_shared_redis
from .output import print_json
from .service import enqueue_file, enqueue_inputs, open_service, require_workers
from .sessions import check_format, scan_sessions, stream_sessions

__all__ = ["enqueue_command"]


def enqueue_command(
    traces: Annotated[
        Path,
        typer.Argument(
            help="JSONL file of traces (samples with --recipe ace); with --format claude-code or openclaw, "
            "a session file or a folder of them (every *.jsonl below it); with --format browser-use, a "
            "saved AgentHistoryList or a folder of them (every *.json below it)."
        ),
    ],
    skillbook: Annotated[
        str,
        typer.Option(help="Name of the skillbook in Redis; NAME@LABEL: the agent is served LABEL's version."),
    ] = "default",
    epochs: Annotated[int, typer.Option(min=1, help="Passes over the input.")] = 1,
    recipe: Annotated[
        str,
        typer.Option(
            help="trace_analyser, ace, claude_code_traces, openclaw_traces, browser_use_traces, or a name "
            "set in ACE_RECIPES."
        ),
    ] = "trace_analyser",
    input_format: Annotated[
        str,
        typer.Option(
            "--format",
            help="jsonl: one input per line. claude-code, openclaw, browser-use: one trace per session "
            "file, converted here, or on the workers with --recipe claude_code_traces / openclaw_traces / "
            "browser_use_traces.",
        ),
    ] = "jsonl",
    canary: CanaryOption = None,
    api_key: Annotated[
        str | None,
        typer.Option(
            "--api-key",
            help="A scoped API key (ace-workers key create): the batch is refused unless its tenant owns "
            "the skillbook and its role is learn or above [ACE_API_KEY].",
            show_default=False,
        ),
    ] = None,
    url: Annotated[
        str | None,
        typer.Option(
            "--url",
            help="Send through intake (ace-workers intake) at this URL, e.g. http://intake:8710, with the "
            "API key: no Redis URL needed. JSONL input only.",
            show_default=False,
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Enqueue a JSONL file, or recorded agent sessions, as one batch for running workers; print the batch id.

    Every argument is checked first, then the input is read twice, a line (or a
    session) at a time: everything is checked and counted, then sent. The
    producer's memory does not grow with the input. Only the batch id (or, with
    --json, one JSON document) goes to stdout; skipped lines are warned of on stderr.
    """
    settings = WorkerSettings.from_env()
    if api_key is not None:  # checked (its shape) by the settings; the producer checks its scope
        try:
            settings = dataclasses.replace(settings, api_key=api_key)
        except InvalidSettingError as exc:  # the flag, not ACE_API_KEY, holds the bad value
            raise typer.BadParameter(exc.reason, param_hint="--api-key") from None
    name = check_skillbook_ref(skillbook).name  # learning writes NAME's head whatever the label
    if url is not None:
        _enqueue_through_intake(
            url, traces, skillbook, epochs, recipe, input_format, canary, settings, as_json
        )
        return
    check_recipe(recipe, settings)
    check_format(input_format, recipe)
    require_shared_redis(
        settings,
        "enqueue",
        "the workers take their work from it (use 'learn' to run everything in-process)",
        kept_embedded=False,
    )
    if input_format == "jsonl":
        count = scan_inputs(traces, recipe, settings, epochs)
    else:
        count = scan_sessions(traces, input_format, recipe, settings, epochs)
    with open_service(settings, run_workers=False, learn_threads=1) as service:
        require_workers(service, recipe, name)
        try:
            if input_format == "jsonl":
                handle = enqueue_file(service, traces, count, skillbook, epochs, recipe, canary)
            else:
                inputs = stream_sessions(traces, input_format, recipe)
                handle = enqueue_inputs(service, inputs, traces, count, skillbook, epochs, recipe, canary)
        except InvalidApiKeyError as exc:  # the producer checked it: say which key the user must fix
            raise exc.given_by("--api-key" if api_key is not None else "ACE_API_KEY") from None
    if as_json:
        print_json(
            {
                "batch_id": handle.batch_id,
                "skillbook": name,
                "served_by": skillbook,
                "recipe": recipe,
                "inputs": count,
                "epochs": epochs,
                "samples": count * epochs,
            }
        )
    else:
        typer.echo(handle.batch_id)


def _enqueue_through_intake(
    url: str,
    traces: Path,
    skillbook: str,
    epochs: int,
    recipe: str,
    input_format: str,
    canary: float | None,
    settings: WorkerSettings,
    as_json: bool,
) -> None:
    """``enqueue --url``: check the file here, POST it to intake with the API key; print the batch id."""
    from ..distributed.producer.http_producer import HttpProducer
    from .inputs import stream_inputs

    if settings.api_key is None:
        raise typer.BadParameter(
            "needs an API key of role learn or above: --api-key or ACE_API_KEY", param_hint="--url"
        )
    for given, hint in ((input_format != "jsonl", "--format"), (canary is not None, "--canary")):
        if given:
            raise typer.BadParameter("not with --url: intake takes JSONL traces", param_hint=hint)
    if recipe == "ace":
        raise typer.BadParameter(
            "recipe ace learns from samples; intake (--url) takes traces", param_hint="--recipe"
        )
    try:
        producer = HttpProducer(url, settings.api_key)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--url") from None
    count = scan_inputs(traces, recipe, settings, epochs)
    batch = producer.enqueue_traces(list(stream_inputs(traces, recipe)), skillbook, epochs, recipe=recipe)
    if as_json:
        print_json(
            {
                "batch_id": batch.batch_id,
                "skillbook": batch.skillbook,
                "served_by": skillbook,
                "recipe": recipe,
                "inputs": count,
                "epochs": epochs,
                "samples": count * epochs,
                "status_url": batch.status_url,
            }
        )
    else:
        typer.echo(batch.batch_id)
