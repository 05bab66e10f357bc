"""The ``ace-workers`` command line: one module per command, the root app in :mod:`.main`.

``ace-workers = "ace_workers.cli:main"`` is the console script.
"""

from __future__ import annotations

from ..distributed.producer.errors import NoWorkersError
from .batch import batch_app
from .common import read_input_lines, require_workers, scan_inputs, stream_inputs
from .dead_letters import dead_letters_app
from .hook import hook_app
from .main import app, main
from .nightly import nightly_app
from .skillbook import skillbook_app

__all__ = [
    # the root command and the console script
    "app",
    "main",
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
