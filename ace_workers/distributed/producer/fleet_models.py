"""Before a batch goes to a fleet with a model named (``learn --model``): do its workers run that model?

On a fleet each worker calls the models of its own settings; the sender's model does not travel
with the batch. So a model named for a batch is checked against the models each running worker
published (``fleet:workers``, worker/fleet.py), and refused unless every worker serving the batch's
queues runs it for the roles it serves. Read with a Redis client alone: refused at once, before
Celery or litellm is loaded and before any sample is sent.
"""

from __future__ import annotations

import time
from typing import Any

import redis

from ..llms import model_fields
from ..settings import WorkerSettings, env_name
from ..store.worker_records import FRESH_SECONDS, read_worker_records
from ..worker.routes import recipe_routes
from .errors import FleetModelMismatch

__all__ = ["check_fleet_models"]


def check_fleet_models(
    client: redis.Redis, settings: WorkerSettings, recipe: str, model: str, *, now: float | None = None
) -> None:
    """FleetModelMismatch unless every running worker of ``recipe``'s queues runs ``model``.

    A worker counts for the queue roles it serves that the recipe uses (a writer only with
    deduplication on: otherwise it calls no model). Records older than FRESH_SECONDS are workers gone.

    Raises:
        UnknownRecipeError: ``recipe`` is neither built in nor configured here (ACE_RECIPES).
    """
    used = {route.queue_role.split(".")[0] for route in recipe_routes(recipe, settings)}
    prefix = f"{settings.queue_prefix}."
    now = time.time() if now is None else now
    checked = False
    for node, record in read_worker_records(client, settings.queue_prefix).items():
        at = record.get("at")
        if not isinstance(at, (int, float)) or now - at > FRESH_SECONDS:
            continue
        roles = [role for role in _roles(record.get("queues"), prefix) if role.split(".")[0] in used]
        published = record.get("models")
        for field in model_fields(roles, settings):
            variable = env_name(field)
            theirs = published.get(variable) if isinstance(published, dict) else None
            if theirs != model:
                # Read from Redis, written by whoever can write there: shown cut.
                raise FleetModelMismatch(model, node, variable, str(theirs)[:200])
            checked = True
    if not checked:
        raise FleetModelMismatch(model, None, None, None)


def _roles(queues: Any, prefix: str) -> list[str]:
    """The queue roles (execute, learn, write, write.K) of a record's queues under ``prefix``."""
    if not isinstance(queues, list):
        return []
    return [q.removeprefix(prefix) for q in queues if isinstance(q, str) and q.startswith(prefix)]
