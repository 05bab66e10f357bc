"""``ace-workers flower``: Flower on the fleet's Redis, with the workers' app and settings, behind basic auth.

Flower is Celery's own ``flower`` subcommand (the ``flower`` package registers it), started
in this process on the app of :mod:`.inspect_app`, so it reads the queues, serializers and
timeouts the workers use. It is never open by default: basic auth comes from
``--basic-auth`` or ``ACE_FLOWER_BASIC_AUTH``, and running without it takes ``--no-auth``.

Flower sees tasks through task events, which :func:`.app.celery_config` turns on for every
worker and producer. Its ``/metrics`` (Prometheus) and ``/healthcheck`` answer without
credentials, as Flower serves them; every page and ``/api/...`` endpoint needs them.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Annotated

import typer

from ..errors import InvalidSettingError
from ..settings import WorkerSettings, env_name
from ..worker.app import ping_redis
from .inspect_app import build_cli_app

__all__ = ["DEFAULT_FLOWER_ADDRESS", "DEFAULT_FLOWER_PORT", "flower_argv", "flower_command"]

logger = logging.getLogger(__name__)

DEFAULT_FLOWER_PORT = 5555
# Loopback unless told otherwise: Flower can revoke tasks and shut workers down.
DEFAULT_FLOWER_ADDRESS = "127.0.0.1"


def flower_argv(*, port: int, address: str, basic_auth: str | None) -> list[str]:
    """The arguments of Celery's ``flower`` subcommand; ``basic_auth=None`` runs it without auth."""
    argv = ["flower", f"--port={port}", f"--address={address}"]
    if basic_auth is not None:
        argv.append(f"--basic-auth={basic_auth}")
    return argv


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
    if not settings.redis_url:
        raise typer.BadParameter("flower needs ACE_REDIS_URL: it watches the workers of that Redis")
    credentials = _basic_auth(settings, basic_auth, no_auth)
    ping_redis(settings.redis_url, timeout=settings.redis_connect_timeout_seconds)
    app = build_cli_app(settings)
    code = app.start(flower_argv(port=port, address=address, basic_auth=credentials))
    if code:
        raise typer.Exit(code=code)
