"""The exit codes of every ``ace-workers`` command, and the one line an unreachable service ends with."""

from __future__ import annotations

import sys

from ..distributed.producer.errors import IntakeUnavailableError, NoWorkersError
from ..distributed.worker.errors import BrokerUnavailable, RedisUnavailable
from .output import printable

__all__ = [
    "EXIT_CODES_HELP",
    "EXIT_DONE",
    "EXIT_FAILURES",
    "EXIT_INTERRUPTED",
    "EXIT_REFUSED",
    "EXIT_UNREACHABLE",
    "EXIT_USAGE",
    "broker_errors",
    "unreachable_line",
]

EXIT_DONE = 0
EXIT_FAILURES = 1  # it ran, and something failed: a sample, a letter kept, a nightly run
EXIT_USAGE = 2  # click's own code for a bad argument; a missing setting, an unknown name, another schema
EXIT_UNREACHABLE = 3  # nothing could be done: Redis, the broker or the workers did not answer
EXIT_REFUSED = 4  # a gate said no: a promotion (candidate not better), a migration (fleet running)
EXIT_INTERRUPTED = 130  # Ctrl-C (SIGINT), as shells report a process it ended: 128 + 2


def broker_errors() -> tuple[type[BaseException], ...]:
    """The broker's "did not answer" error, if the broker's client (kombu) was loaded at all.

    Looked up, not imported: a command that never loaded kombu cannot have raised its errors,
    and the state commands must not load it (they answer in a fraction of a second).
    """
    exceptions = sys.modules.get("kombu.exceptions")
    return (exceptions.OperationalError,) if exceptions is not None else ()


EXIT_CODES_HELP = (
    f"Exit codes: {EXIT_DONE} done; {EXIT_FAILURES} finished with failures (a sample failed, a "
    f"dead letter was kept, ...); {EXIT_USAGE} usage error (a bad argument or file, a missing "
    "setting such as ACE_REDIS_URL, a worker configuration the worker refuses, an unknown "
    f"skillbook or batch, Redis data of another schema than this ace-workers knows); {EXIT_UNREACHABLE} "
    "infrastructure unreachable (Redis or the broker did not answer, or no worker serves a queue "
    f"the work needs); {EXIT_REFUSED} refused by a gate or a policy (label promote --if-better: "
    "the candidate is not better; migrate: a migration needs the fleet stopped; an API key of "
    f"another tenant; tenant remove while its samples wait or run); {EXIT_INTERRUPTED} interrupted "
    "by Ctrl-C (learn, status --watch). Results go to stdout "
    "(one JSON document with --json); warnings and errors to stderr."
)


def unreachable_line(exc: BaseException) -> str:
    """What could not be reached, in one line (control characters and newlines escaped)."""
    if isinstance(exc, (RedisUnavailable, NoWorkersError, IntakeUnavailableError)):
        said = str(exc)  # these name the service and what to do
    elif isinstance(exc, (BrokerUnavailable, *broker_errors())):
        said = f"the broker did not answer: {exc}"
    else:
        said = f"Redis did not answer: {type(exc).__name__}: {exc}"
    return printable(said)
