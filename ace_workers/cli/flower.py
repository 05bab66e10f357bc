"""``ace-workers flower``: Flower on the fleet's Redis, behind basic auth unless told ``--no-auth``."""

from __future__ import annotations

import dataclasses
import logging
from typing import Annotated

import typer

from ..distributed.errors import InvalidSettingError
from ..distributed.ops.flower import DEFAULT_FLOWER_ADDRESS, DEFAULT_FLOWER_PORT, run_flower
from ..distributed.settings import WorkerSettings, env_name
from .options import require_shared_redis

__all__ = ["flower_command"]

logger = logging.getLogger(__name__)


def _basic_auth(settings: WorkerSettings, option: str | None, no_auth: bool) -> str | None:
    """The credentials Flower runs with, or None with an explicit ``--no-auth``."""
    variable = env_name("flower_basic_auth")
    if no_auth:
        if option is not None:
            raise typer.BadParameter("--basic-auth and --no-auth contradict each other; give one")
        if settings.flower_basic_auth is not None:
            logger.warning("--no-auth given: %s is set but ignored, Flower runs without auth", variable)
        logger.warning("Flower runs WITHOUT authentication: anyone who reaches its port can control workers")
        return None
    if option is not None:
        try:
            dataclasses.replace(settings, flower_basic_auth=option)  # checks it like the setting
        except InvalidSettingError as exc:
            raise typer.BadParameter(f"--basic-auth: {exc.reason}") from None
        return option
    if settings.flower_basic_auth is None:
        raise typer.BadParameter(
            f"Flower needs basic auth: pass --basic-auth USER:PASSWORD or set {variable}. "
            "--no-auth runs it open to anyone who can reach the port (it can revoke tasks and "
            "shut workers down)."
        )
    return settings.flower_basic_auth


def flower_command(
    port: Annotated[int, typer.Option(min=1, max=65535, help="Port of Flower's web UI and API.")] = (
        DEFAULT_FLOWER_PORT
    ),
    address: Annotated[
        str, typer.Option(help="Address to listen on; 0.0.0.0 for every interface (behind auth).")
    ] = DEFAULT_FLOWER_ADDRESS,
    basic_auth: Annotated[
        str | None,
        typer.Option(
            "--basic-auth",
            metavar="USER:PASSWORD",
            help="Credentials (comma-separated for several users); default: ACE_FLOWER_BASIC_AUTH.",
        ),
    ] = None,
    no_auth: Annotated[
        bool, typer.Option("--no-auth", help="Run without authentication (explicitly; never the default).")
    ] = False,
) -> None:
    """Run Flower, Celery's web monitor, on the fleet's Redis (needs ACE_REDIS_URL and basic auth)."""
    settings = WorkerSettings.from_env()
    require_shared_redis(settings, "flower", "it watches the workers of that Redis", kept_embedded=False)
    credentials = _basic_auth(settings, basic_auth, no_auth)
    code = run_flower(settings, port=port, address=address, basic_auth=credentials)
    if code:
        raise typer.Exit(code=code)
