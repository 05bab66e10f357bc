"""Logging of a worker process: our configuration, and Celery told to keep its hands off it.

Celery's worker configures logging itself when it starts unless a receiver is
connected to its ``setup_logging`` signal; then it leaves the root logger,
its handlers and its formatter alone (and does not redirect stdout either).
Both formats are ours, so both carry the step fields (see :mod:`.logs`).
"""

from __future__ import annotations

from typing import Any, TextIO

from celery import signals

from .logs import configure_logging

__all__ = ["leave_logging_alone", "use_worker_logging"]


def use_worker_logging(log_format: str, loglevel: int | str, stream: TextIO | None = None) -> None:
    """Configure logging as ``log_format`` (to ``stream``, default stderr) and keep Celery from replacing it.

    Only for a process that runs a worker: the signal is process-wide.
    """
    configure_logging(log_format, loglevel, stream=stream)
    signals.setup_logging.connect(leave_logging_alone, weak=False)


def leave_logging_alone(**kwargs: Any) -> None:
    """Connected to ``setup_logging``: that a receiver exists is what stops Celery; nothing to do."""
