"""The distributed commands (learn, worker, enqueue, status, batch, flower, skillbook, nightly, hook, ...)."""

from __future__ import annotations

import typer

from ..ops.flower import flower_command
from ..producer.errors import NoWorkersError
from .batch import batch_app, enqueue_command, learn_command, status_command, worker_command
from .common import read_input_lines, require_workers, scan_inputs, stream_inputs
from .dead_letters import dead_letters_app
from .hook import hook_app
from .nightly import beat_command, nightly_app
from .skillbook import skillbook_app

__all__ = [
    # wiring into the root command
    "register_commands",
    # command groups
    "batch_app",
    "skillbook_app",
    "dead_letters_app",
    "nightly_app",
    "hook_app",
    # reading inputs
    "read_input_lines",
    "scan_inputs",
    "stream_inputs",
    # checks
    "NoWorkersError",
    "require_workers",
]


def register_commands(app: typer.Typer) -> None:
    """Add the distributed commands to the root ``ace-workers`` app."""
    app.command("learn")(learn_command)
    app.command("worker")(worker_command)
    app.command("enqueue")(enqueue_command)
    app.command("status")(status_command)
    app.command("flower")(flower_command)
    app.command("beat")(beat_command)
    app.add_typer(batch_app, name="batch")
    app.add_typer(skillbook_app, name="skillbook")
    app.add_typer(dead_letters_app, name="dead-letters")
    app.add_typer(nightly_app, name="nightly")
    app.add_typer(hook_app, name="hook")
