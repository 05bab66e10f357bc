"""The check a command makes before it starts work that calls models: can each one be called from here?"""

from __future__ import annotations

from collections.abc import Iterable

import typer

from ..distributed.settings import QUEUE_ROLES, WorkerSettings
from ..errors import ModelUnavailableError
from .exit_codes import EXIT_USAGE

__all__ = ["refuse_model_not_run", "refuse_unusable_models"]


def refuse_unusable_models(settings: WorkerSettings, roles: Iterable[str] = QUEUE_ROLES) -> None:
    """Exit with one line on stderr, and status 2, when a model the ``roles`` use cannot be called.

    Found now, not as one failed (and retried) sample after another.
    """
    from ..distributed.llms import check_models  # the LLM clients load when a command checks, not for --help

    try:
        check_models(settings, roles)
    except ModelUnavailableError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(code=EXIT_USAGE) from None


def refuse_model_not_run(settings: WorkerSettings, recipe: str, model: str) -> None:
    """On a fleet: FleetModelMismatch (one line, status 2) unless the workers of ``recipe``'s queues
    run ``model``, the one a command was given. Their own settings choose their models, not ours."""
    from ..distributed.ops.embedded_redis import resolve_redis
    from ..distributed.producer.fleet_models import check_fleet_models
    from ..operations import open_fleet

    with resolve_redis(settings) as (_broker_url, redis_url), open_fleet(settings, redis_url) as fleet:
        check_fleet_models(fleet.redis, settings, recipe, model)
