"""``ace-workers console``: the web console on the fleet's Redis, behind credentials unless ``--no-auth``."""

from __future__ import annotations

import logging
from typing import Annotated

import typer

from ..console.access import ConsoleAccess
from ..console.errors import ConsoleSettingError
from ..distributed.settings import WorkerSettings
from .common import open_service, require_shared_redis

__all__ = ["console_command", "DEFAULT_CONSOLE_PORT"]

logger = logging.getLogger(__name__)

DEFAULT_CONSOLE_PORT = 8700


def console_command(
    host: Annotated[
        str, typer.Option(help="Address to listen on; 0.0.0.0 for every interface (needs credentials).")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="Port of the console.")] = DEFAULT_CONSOLE_PORT,
    basic_auth: Annotated[
        str | None,
        typer.Option(
            "--basic-auth",
            metavar="USER:PASSWORD",
            help="Credentials (comma-separated for several users); default: ACE_CONSOLE_BASIC_AUTH.",
        ),
    ] = None,
    no_auth: Annotated[
        bool, typer.Option("--no-auth", help="Run without authentication: on a loopback address only.")
    ] = False,
    read_only: Annotated[
        bool, typer.Option("--read-only", help="Show everything, change nothing: every POST is refused.")
    ] = False,
) -> None:
    """Run the web console: skillbooks, history, review, evaluations, batches, fleet (needs ACE_REDIS_URL)."""
    settings = WorkerSettings.from_env()
    require_shared_redis(settings, "console", "it shows what the fleet of that Redis learned")
    if no_auth and basic_auth is not None:
        raise typer.BadParameter("--basic-auth and --no-auth contradict each other; give one")
    try:
        access = ConsoleAccess.from_settings(
            basic_auth or settings.console_basic_auth, settings.console_tokens, no_auth=no_auth, host=host
        )
    except ConsoleSettingError as exc:
        raise typer.BadParameter(str(exc)) from None
    if access.no_auth:
        logger.warning("the console runs WITHOUT authentication, on %s only", host)
    import uvicorn

    from ..console.app import build_console_app

    with open_service(settings, run_workers=False, learn_threads=1) as service:
        app = build_console_app(service, access, host=host, read_only=read_only)
        typer.echo(
            f"ace-workers console on http://{host}:{port}/{' (read-only)' if read_only else ''}", err=True
        )
        uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False)
