"""``ace-workers intake``: the HTTP front door producers send traces to with an API key."""

from __future__ import annotations

from typing import Annotated

import typer

from ..distributed.settings import WorkerSettings
from .options import require_shared_redis
from .service import open_service

__all__ = ["intake_command", "DEFAULT_INTAKE_PORT"]

DEFAULT_INTAKE_PORT = 8710


def intake_command(
    host: Annotated[
        str, typer.Option(help="Address to listen on; 0.0.0.0 for every interface.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="Port of intake.")] = DEFAULT_INTAKE_PORT,
) -> None:
    """Serve POST /v1/traces: producers enqueue traces with an API key (role learn or above), never
    the Redis URL (needs ACE_REDIS_URL: intake holds it for them)."""
    settings = WorkerSettings.from_env()
    require_shared_redis(settings, "intake", "the workers take the batches it enqueues from it")
    # Starlette and uvicorn load when intake runs, not for --help.
    import uvicorn

    from ..console.access import CREATE_KEY
    from ..intake.endpoints import build_intake_app

    with open_service(settings, run_workers=False, learn_threads=1) as service:
        app = build_intake_app(service, host=host)
        if not app.state.fleet.api_keys.list():
            typer.echo(
                f"no API key exists yet: no producer is let in until one is made ({CREATE_KEY})", err=True
            )
        typer.echo(f"ace-workers intake on http://{host}:{port}/v1/traces", err=True)
        uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False)
