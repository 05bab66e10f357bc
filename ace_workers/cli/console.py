"""``ace-workers console``: the web console on the fleet's Redis, behind API keys unless ``--no-auth``."""

from __future__ import annotations

import logging
from typing import Annotated

import typer

from ..distributed.settings import WorkerSettings
from .options import require_shared_redis
from .service import open_service

__all__ = ["console_command", "DEFAULT_CONSOLE_PORT"]

logger = logging.getLogger(__name__)

DEFAULT_CONSOLE_PORT = 8700


def console_command(
    host: Annotated[
        str, typer.Option(help="Address to listen on; 0.0.0.0 for every interface (needs API keys).")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="Port of the console.")] = DEFAULT_CONSOLE_PORT,
    no_auth: Annotated[
        bool, typer.Option("--no-auth", help="Run without authentication: on a loopback address only.")
    ] = False,
    read_only: Annotated[
        bool, typer.Option("--read-only", help="Show everything, change nothing: every POST is refused.")
    ] = False,
) -> None:
    """Run the web console: skillbooks, history, review, evaluations, batches, fleet (needs ACE_REDIS_URL).

    People and scripts sign in with an API key (ace-workers key create): scripts send it as
    a bearer token, people give it as the password their browser asks for (any user name).
    """
    # The console's stack (Starlette, the MCP auth it shares) loads when the console runs.
    from ..console.access import CREATE_KEY, ConsoleAccess
    from ..console.errors import ConsoleSettingError

    settings = WorkerSettings.from_env()
    require_shared_redis(settings, "console", "it shows what the fleet of that Redis learned")
    try:
        access = ConsoleAccess.from_settings(no_auth=no_auth, host=host)
    except ConsoleSettingError as exc:
        raise typer.BadParameter(str(exc)) from None
    if access.no_auth:
        logger.warning("the console runs WITHOUT authentication, on %s only", host)
    import uvicorn

    from ..console.app import build_console_app

    with open_service(settings, run_workers=False, learn_threads=1) as service:
        app = build_console_app(service, access, host=host, read_only=read_only)
        if access.api_keys is not None and not access.api_keys.list():
            typer.echo(f"no API key exists yet: nobody signs in until one is made ({CREATE_KEY})", err=True)
        typer.echo(
            f"ace-workers console on http://{host}:{port}/{' (read-only)' if read_only else ''}", err=True
        )
        uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False)
