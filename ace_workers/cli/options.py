"""The options and arguments the commands share, and the checks run on them before anything connects."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated

import typer

from ..core.files import special_file_kind
from ..distributed.recipe_registry import BUILT_IN_RECIPES
from ..distributed.settings import WorkerSettings, env_name
from ..distributed.store.actors import actor_from_option
from ..distributed.store.errors import InvalidLabelError
from ..distributed.store.keys import validate_skillbook_name
from ..distributed.store.label_names import SkillbookRef, parse_share, parse_skillbook_ref, validate_label
from ..errors import MissingSettingError

__all__ = [
    "ActorOption",
    "CanaryOption",
    "JsonOption",
    "NoteOption",
    "SkillbookNameArgument",
    "actor_or_fail",
    "check_label",
    "check_output_path",
    "check_recipe",
    "check_skillbook_name",
    "check_skillbook_ref",
    "redis_settings",
    "require_shared_redis",
    "settings_for_model",
]

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
