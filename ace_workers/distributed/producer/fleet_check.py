"""Before sending a batch, or waiting for one: does a worker serve every queue its recipe uses?

The command line and Python callers (``BatchHandle.wait``, ``DistributedRunner.run``) ask the
same question and get the same NoWorkersError, instead of waiting in silence for a queue no
worker reads. Only the queues the recipe's steps run on count: a trace_analyser batch never
touches the execute queue, so it needs no execute worker.
"""

from __future__ import annotations

from ..settings import env_name
from ..worker.dispatch import Dispatcher
from ..worker.fleet import check_fleet_agrees
from ..worker.runtime import WorkerRuntime
from .errors import NoWorkersError

__all__ = ["recipe_queues", "require_workers", "worker_commands"]


def recipe_queues(runtime: WorkerRuntime, recipe: str, skillbook: str) -> list[str]:
    """The queues the steps of ``recipe`` run on when writing ``skillbook`` (its write partition's).

    Raises:
        UnknownRecipeError: ``recipe`` is neither built in nor configured here (ACE_RECIPES).
    """
    routes = runtime.routes(recipe)
    return sorted({runtime.queue(route.queue_role, skillbook) for route in routes})


def require_workers(dispatch: Dispatcher, recipe: str, skillbook: str) -> None:
    """Raise NoWorkersError unless some worker answers for every queue ``recipe`` uses.

    Waits at most ACE_WORKER_REPLY_SECONDS, and only as long when a queue has no worker.
    First FleetSettingsMismatch if a running worker has other settings that shape the recipe.
    """
    runtime = dispatch.runtime
    check_fleet_agrees(runtime, recipe)
    wanted = recipe_queues(runtime, recipe, skillbook)
    served = dispatch.queue_consumers(wanted, runtime.settings.worker_reply_seconds)
    missing = [queue for queue in wanted if queue not in served]
    if missing:
        prefix = f"{runtime.settings.queue_prefix}."
        commands = " and ".join(
            f"'{command}'" for command in worker_commands([queue.removeprefix(prefix) for queue in missing])
        )
        raise NoWorkersError(
            f"no worker serves {', '.join(missing)} (recipe {recipe!r} needs it); start them with "
            f"{commands} (or unset {env_name('redis_url')} to run everything in-process)",
            queues=missing,
        )


def worker_commands(roles: list[str]) -> list[str]:
    """The ``ace-workers worker`` commands that serve the queue ``roles`` (execute, learn, write, write.K).

    A writer is a worker of its own with one slot: the worker refuses the write queue beside
    others at the default concurrency (WriteConcurrencyError), so a hint naming both would be refused.
    """
    readers = [role for role in roles if not role.startswith("write")]
    commands = [f"ace-workers worker --queues {','.join(readers)}"] if readers else []
    commands += [
        f"ace-workers worker --queues {role} --concurrency 1" for role in roles if role.startswith("write")
    ]
    return commands
