"""What the distributed commands share: reading JSONL inputs, the service, the check for workers."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from ..core.environments import Sample
from ..core.files import special_file_kind, write_text_atomically
from ..core.jsonl import SkippedLines, iter_jsonl
from ..core.skillbook import Skillbook
from ..distributed.ops.embedded_redis import resolve_redis
from ..distributed.producer.errors import BatchSizeError, LabelNotServedError
from ..distributed.producer.fleet_check import require_workers as require_recipe_workers
from ..distributed.producer.producer import BatchHandle
from ..distributed.recipe_registry import BUILT_IN_RECIPES
from ..distributed.service import Service, build_service, local_workers
from ..distributed.settings import WorkerSettings, env_name
from ..distributed.store.actors import actor_from_option
from ..distributed.store.errors import InvalidLabelError, UnknownLabelError
from ..distributed.store.fill import skillbook_fill
from ..distributed.store.keys import validate_skillbook_name
from ..distributed.store.labels import SkillbookRef, parse_skillbook_ref, validate_label
from ..distributed.store.store import list_skillbooks
from ..distributed.worker.errors import PayloadError
from ..distributed.worker.payload import check_trace
from ..distributed.worker.serving import parse_share
from ..errors import MissingSettingError

__all__ = [
    "ActorOption",
    "actor_or_fail",
    "check_label",
    "NoteOption",
    "SkillbookNameArgument",
    "CanaryOption",
    "check_skillbook_ref",
    "check_output_path",
    "check_recipe",
    "check_skillbook_name",
    "console",
    "describe_fill",
    "enqueue_file",
    "enqueue_inputs",
    "err_console",
    "JsonOption",
    "open_service",
    "print_json",
    "print_warning",
    "printable",
    "read_input_lines",
    "redis_settings",
    "require_shared_redis",
    "require_workers",
    "scan_inputs",
    "settings_for_model",
    "skillbook_fill",
    "skipped_lines_reported",
    "store_or_fail",
    "stream_inputs",
    "write_skillbook_files",
]

# stdout carries only a command's result (a batch id, a table, a skillbook, one JSON document), so
# a script can read it; everything said along the way (warnings, skipped lines, progress) goes to
# stderr. On both, a line is never broken at the terminal's width (soft_wrap): a status or
# error line a script greps stays one line (tables still fit the width).
console = Console(soft_wrap=True)
err_console = Console(stderr=True, soft_wrap=True)

JsonOption = Annotated[bool, typer.Option("--json", help="Print one JSON document, for scripts.")]
SkillbookNameArgument = Annotated[str, typer.Argument(help="The skillbook's name in Redis.")]
# Why a person acted: recorded with the change (change log, label log) it makes.
NoteOption = Annotated[str, typer.Option("--note", help="Why, as the change log records it.")]
# Who acts by hand (review decisions, pins, label moves): recorded in the change log.
ActorOption = Annotated[
    str | None,
    typer.Option(
        "--actor",
        envvar="ACE_ACTOR",
        help="Who is acting, as the change log records it (default: user:<login name>).",
    ),
]


def print_warning(message: str) -> None:
    """One warning line on stderr (``message`` printed as it is, never read as markup)."""
    err_console.print(message, style="yellow", markup=False)


# C0 and C1 control characters and DEL: a terminal acts on them (an escape sequence in a name
# read from Redis could set the window title, move the cursor or clear the screen).
_CONTROLS = {code: f"\\x{code:02x}" for code in [*range(0x20), *range(0x7F, 0xA0)]}
_CONTROLS_BUT_LINES = {code: text for code, text in _CONTROLS.items() if chr(code) not in "\n\t"}
# What JSON leaves as it is though a terminal acts on it (it escapes only C0 itself).
_JSON_CONTROLS = {code: f"\\u{code:04x}" for code in range(0x7F, 0xA0)}


def printable(text: object, *, keep_lines: bool = False) -> str:
    """``text`` read from Redis, safe for a terminal: control characters as escapes (``\\x1b``).

    Newlines and tabs are escaped too, unless ``keep_lines`` (for multi-line text such as markdown).
    """
    return str(text).translate(_CONTROLS_BUT_LINES if keep_lines else _CONTROLS)


# -- arguments: checked before anything connects ------------------------------------------


def check_skillbook_name(name: str, param: str = "NAME") -> str:
    """``name`` if it can name a skillbook, else a usage error naming the argument."""
    try:
        return validate_skillbook_name(name)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint=param) from None


def check_label(label: str, param: str = "LABEL") -> str:
    """``label`` if it can name a version, else a usage error naming the argument."""
    try:
        return validate_label(label)
    except InvalidLabelError as exc:
        raise typer.BadParameter(str(exc), param_hint=param) from None


def actor_or_fail(option: str | None) -> str:
    """The actor an ``--actor`` option (or ACE_ACTOR) names, else a usage error naming the option."""
    try:
        return actor_from_option(option)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--actor") from None


def check_skillbook_ref(ref: str, param: str = "--skillbook") -> SkillbookRef:
    """``NAME`` or ``NAME@LABEL`` (served by the label, learning the head), else a usage error."""
    try:
        return parse_skillbook_ref(ref)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint=param) from None


def _parse_canary(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        return parse_share(value)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--canary") from None


# A canary share of executions served by the "canary" label (the rest by the skillbook's label).
CanaryOption = Annotated[
    float | None,
    typer.Option(
        "--canary",
        parser=_parse_canary,
        metavar="SHARE",
        help="Serve this share of the samples (10% or 0.1) by label 'canary' [ACE_CANARY_SHARE, else 0].",
    ),
]


def check_recipe(recipe: str, settings: WorkerSettings) -> str:
    """``recipe`` if workers configured like this process know it (built-in or ACE_RECIPES)."""
    known = [*BUILT_IN_RECIPES, *settings.recipe_paths()]
    if recipe not in known:
        raise typer.BadParameter(
            f"unknown recipe {recipe!r}: use {', '.join(known)} "
            "(add your own with ACE_RECIPES=name=module:function)",
            param_hint="--recipe",
        )
    return recipe


def check_output_path(path: Path | None, param: str) -> None:
    """Refuse an output file that is not a regular file, or whose folder does not exist, before any work.

    A FIFO, a device or a socket (or a link to one) is refused, never written: the
    write renames a temporary file over the path, which would replace /dev/null itself.
    """
    if path is None:
        return
    kind = special_file_kind(path)
    if kind == "a folder":
        raise typer.BadParameter(f"{path} is a folder: name a file to write", param_hint=param)
    if kind is not None:
        raise typer.BadParameter(
            f"{path} is {kind}, not a regular file: name a regular file to write", param_hint=param
        )
    if not path.parent.is_dir():
        raise typer.BadParameter(f"{path}: the folder {path.parent} does not exist", param_hint=param)


def write_skillbook_files(book: Skillbook, out: Path | None, markdown: Path | None) -> None:
    """Write ``book`` as JSON to ``out`` and as markdown to ``markdown`` (those given), each atomically.

    A path that cannot be written is a one-line error naming it; nothing half-written stays.
    """
    for path, render, param in ((out, book.dumps, "--out"), (markdown, book.as_markdown, "--markdown")):
        if path is None:
            continue
        try:
            write_text_atomically(path, render())
        except OSError as exc:
            raise typer.BadParameter(f"cannot write {path}: {exc.strerror or exc}", param_hint=param) from exc


def print_json(value: Any) -> None:
    """One JSON document on stdout, for scripts (``--json``)."""
    text = json.dumps(value, indent=2, ensure_ascii=False, default=str)
    typer.echo(text.translate(_JSON_CONTROLS))  # such characters occur only inside JSON strings


def read_input_lines(
    path: Path, skipped: SkippedLines, *, objects_only: bool = False
) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` per JSON line of a JSONL input (core.jsonl's reader); others to ``skipped``.

    A file that cannot be read is a usage error naming it, not a traceback.
    """
    try:
        yield from iter_jsonl(path, skipped, objects_only=objects_only)
    except OSError as exc:
        raise typer.BadParameter(f"cannot read {path}: {exc.strerror or exc}") from exc


@contextmanager
def skipped_lines_reported(path: Path) -> Iterator[SkippedLines]:
    """A record of the lines of ``path`` a reading skips, printed as one warning when the reading ends.

    Printed even when the reading ends in an error, so the lines skipped before it are not lost.
    """
    skipped = SkippedLines(str(path))
    try:
        yield skipped
    finally:
        if skipped:
            print_warning(skipped.describe())


def sample_from_line(item: Any, path: Path, number: int) -> Sample:
    names = {f.name for f in dataclasses.fields(Sample)}
    if not isinstance(item, dict) or "question" not in item or set(item) - names:
        raise typer.BadParameter(
            f"{path}:{number}: not a sample (an object with 'question' and only {', '.join(sorted(names))})"
        )
    return Sample(**item)


def scan_inputs(path: Path, recipe: str, settings: WorkerSettings, epochs: int = 1) -> int:
    """The first pass over a JSONL input: check every line, warn of lines that are not JSON; count inputs.

    Nothing is sent yet. A trace too large or not JSON all the way down, a record that is
    not a sample (``recipe`` ace), no usable line, or more samples (inputs x ``epochs``)
    than ACE_MAX_BATCH_SIZE is an error naming the file (and the line).
    """
    limit = settings.max_batch_size
    if epochs > limit:  # refused before the file is read
        raise typer.BadParameter(
            f"{epochs} epochs is above ACE_MAX_BATCH_SIZE={limit} samples", param_hint="--epochs"
        )
    count = 0
    with skipped_lines_reported(path) as skipped:
        for number, value in read_input_lines(path, skipped):
            if recipe == "ace":
                sample_from_line(value, path, number)
            else:
                try:
                    check_trace(value, max_bytes=settings.max_trace_bytes)
                except PayloadError as exc:
                    raise typer.BadParameter(f"{path}:{number}: {exc}") from exc
            count += 1
    if not count:
        raise typer.BadParameter(f"{path} holds no usable line")
    if count * epochs > limit:
        times = f" x {epochs} epochs = {count * epochs} samples" if epochs > 1 else ""
        raise typer.BadParameter(
            f"{path} holds {count} inputs{times}, above ACE_MAX_BATCH_SIZE={limit}; nothing "
            "was sent (split the file, or raise the limit)"
        )
    return count


def stream_inputs(path: Path, recipe: str) -> Iterator[Any]:
    """The second pass: the inputs of a JSONL file checked by scan_inputs, one line at a time."""
    # The first pass reported the skipped lines already.
    for number, value in read_input_lines(path, SkippedLines(str(path))):
        yield sample_from_line(value, path, number) if recipe == "ace" else value


def enqueue_file(
    service: Service,
    path: Path,
    count: int,
    skillbook: str,
    epochs: int,
    recipe: str,
    canary: float | None = None,
) -> BatchHandle:
    """Send a scanned JSONL file as one batch of ``count`` inputs."""
    return enqueue_inputs(
        service, stream_inputs(path, recipe), path, count, skillbook, epochs, recipe, canary
    )


def enqueue_inputs(
    service: Service,
    inputs: Iterator[Any],
    path: Path,
    count: int,
    skillbook: str,
    epochs: int,
    recipe: str,
    canary: float | None = None,
) -> BatchHandle:
    """Send the ``count`` scanned inputs read from ``path`` as one batch (``skillbook`` may be NAME@LABEL)."""
    producer = service.producer
    enqueue = producer.enqueue_samples if recipe == "ace" else producer.enqueue_traces
    try:
        # Streamed whatever the epochs: workers send later epochs from the inputs the batch stored.
        return enqueue(inputs, skillbook, epochs, recipe=recipe, count=count, canary=canary)
    except BatchSizeError as exc:
        # The input changed between the two passes.
        raise typer.BadParameter(f"{path}: {exc}") from exc
    except (UnknownLabelError, LabelNotServedError) as exc:  # refused before anything was sent
        raise typer.BadParameter(str(exc), param_hint="--skillbook") from exc


def redis_settings(command: str, why: str, *, kept_embedded: bool = True) -> WorkerSettings:
    """The settings from the environment, if they name a Redis that outlives this command.

    That is ACE_REDIS_URL or, where ``kept_embedded``, ACE_EMBEDDED_REDIS_DIR (an embedded
    Redis kept in a folder). Neither: MissingSettingError, one line naming both (exit 2),
    instead of opening a fresh embedded Redis that holds nothing.
    """
    settings = WorkerSettings.from_env()
    require_shared_redis(settings, command, why, kept_embedded=kept_embedded)
    return settings


def require_shared_redis(
    settings: WorkerSettings, command: str, why: str, *, kept_embedded: bool = True
) -> None:
    """MissingSettingError unless ``settings`` name a Redis other commands (or runs) also see."""
    if settings.redis_url or (kept_embedded and settings.embedded_redis_dir):
        return
    url = env_name("redis_url")
    kept = f", or {env_name('embedded_redis_dir')} (the folder of an embedded Redis kept across runs)"
    raise MissingSettingError(url, f"{command} needs {url}{kept if kept_embedded else ''}: {why}")


def settings_for_model(model: str | None) -> WorkerSettings:
    settings = WorkerSettings.from_env()
    if model:
        settings = dataclasses.replace(
            settings, agent_model=model, reflector_model=model, skill_manager_model=model
        )
    return settings


def require_workers(service: Service, recipe: str, skillbook: str) -> None:
    """Raise NoWorkersError unless some worker answers for every queue ``recipe`` uses for ``skillbook``."""
    require_recipe_workers(service.dispatcher, recipe, skillbook)


@contextmanager
def open_service(settings: WorkerSettings, *, run_workers: bool, learn_threads: int) -> Iterator[Service]:
    """The service on the settings' Redis (an embedded one if none is named), with workers if asked.

    Without workers of its own a command reads what others left in Redis: a fresh embedded
    Redis would hold nothing, so one is refused (require_shared_redis). Commands check it
    first, naming themselves, with redis_settings; this is the backstop.
    """
    if not run_workers:
        require_shared_redis(
            settings, "this command", "it reads what workers and other commands left in Redis"
        )
    with resolve_redis(settings) as (broker_url, redis_url):
        service = build_service(settings, redis_url=redis_url, broker_url=broker_url)
        try:
            if run_workers:
                with local_workers(service, learn_threads=learn_threads):
                    yield service
            else:
                yield service
        finally:
            service.close()


def store_or_fail(service: Service, name: str) -> Any:
    store = service.runtime.store(name)
    if not store.exists():
        known = (
            ", ".join(list_skillbooks(service.runtime.redis, service.runtime.settings.queue_prefix)) or "none"
        )
        raise typer.BadParameter(f"no skillbook named {name!r} in Redis (known: {known})")
    return store


def describe_fill(name: str, fill: dict[str, int]) -> str | None:
    """One line when a skillbook is full or has left ADDs out; None otherwise."""
    active, limit, skipped = fill["active_skills"], fill["max_skills"], fill["adds_skipped_full"]
    if active < limit and not skipped:
        return None
    state = "full" if active >= limit else "below its limit now"
    return (
        f"skillbook {name!r} is {state}: {active} of {limit} active skills (ACE_MAX_SKILLBOOK_SKILLS); "
        f"{skipped} ADD(s) left out for lack of room, the rest of their batches applied"
    )
