"""The check a command makes before it starts work that calls models: can each one be called from here?"""

from __future__ import annotations

from collections.abc import Iterable

import typer

from ..distributed.llms import check_models
from ..distributed.settings import QUEUE_ROLES, WorkerSettings
from ..errors import ModelUnavailableError
from .exit_codes import EXIT_USAGE

__all__ = ["refuse_unusable_models"]


def refuse_unusable_models(settings: WorkerSettings, roles: Iterable[str] = QUEUE_ROLES) -> None:
    """Exit with one line on stderr, and status 2, when a model the ``roles`` use cannot be called.

    Found now, not as one failed (and retried) sample after another.
    """
    try:
        check_models(settings, roles)
    except ModelUnavailableError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(code=EXIT_USAGE) from None
