"""Flower on the fleet's Redis, with the workers' app and settings (``ace-workers flower`` runs it).

Flower is Celery's own ``flower`` subcommand (the ``flower`` package registers it), started
in this process on the app of :mod:`.inspect_app`, so it reads the queues, serializers and
timeouts the workers use. It is never open by default: the command
(:mod:`ace_workers.cli.flower`) takes basic auth from ``--basic-auth`` or
``ACE_FLOWER_BASIC_AUTH``, and running without it takes ``--no-auth``.

Flower sees tasks through task events, which :func:`.app.celery_config` turns on for every
worker and producer. Its ``/metrics`` (Prometheus) and ``/healthcheck`` answer without
credentials, as Flower serves them; every page and ``/api/...`` endpoint needs them.
"""

from __future__ import annotations

from ..errors import InvalidSettingError
from ..settings import WorkerSettings, env_name

__all__ = ["DEFAULT_FLOWER_ADDRESS", "DEFAULT_FLOWER_PORT", "flower_argv", "run_flower"]

DEFAULT_FLOWER_PORT = 5555
# Loopback unless told otherwise: Flower can revoke tasks and shut workers down.
DEFAULT_FLOWER_ADDRESS = "127.0.0.1"


def flower_argv(*, port: int, address: str, basic_auth: str | None) -> list[str]:
    """The arguments of Celery's ``flower`` subcommand; ``basic_auth=None`` runs it without auth."""
    argv = ["flower", f"--port={port}", f"--address={address}"]
    if basic_auth is not None:
        argv.append(f"--basic-auth={basic_auth}")
    return argv


def run_flower(settings: WorkerSettings, *, port: int, address: str, basic_auth: str | None) -> int:
    """Run Flower on the workers' app until it stops; its exit code.

    Raises:
        InvalidSettingError: ``settings`` name no Redis (ACE_REDIS_URL).
    """
    if not settings.redis_url:
        raise InvalidSettingError(
            env_name("redis_url"), None, "Flower watches the workers of a Redis: set it"
        )
    # redis loads when Flower starts: the command's --help reads this module's defaults only.
    from ..worker.redis_health import ping_redis

    ping_redis(settings.redis_url, timeout=settings.redis_connect_timeout_seconds)
    from .inspect_app import build_cli_app  # Celery, only when Flower starts

    app = build_cli_app(settings)
    code: int = app.start(flower_argv(port=port, address=address, basic_auth=basic_auth))
    return code
