"""The ``ace-workers`` command line: one module per command, the root app in :mod:`.root`.

``ace-workers = "ace_workers.cli:main"`` is the console script.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from ..lazy import lazy_exports

if TYPE_CHECKING:
    from ..distributed.producer.errors import NoWorkersError
    from .batch import batch_app
    from .dead_letters import dead_letters_app
    from .hook import hook_app
    from .inputs import read_input_lines, scan_inputs, stream_inputs
    from .nightly import nightly_app
    from .root import app
    from .service import require_workers
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

# PEP 562: the re-exports load on first use (reading inputs loads the core's sample types).
_SOURCES = (
    ".root",
    ".batch",
    ".skillbook",
    ".dead_letters",
    ".nightly",
    ".hook",
    ".inputs",
    ".service",
    "ace_workers.distributed.producer.errors",
)
__getattr__ = lazy_exports(__name__, __all__, _SOURCES)


def main() -> None:
    """The console script: ``ace-workers --version`` answers at once; anything else runs the app.

    The version needs none of the commands, so it is printed before they are imported.
    """
    if sys.argv[1:] == ["--version"]:
        from ..extras import PROJECT_VERSION

        print(f"ace-workers {PROJECT_VERSION}")
        return
    from .root import main as run

    run()
