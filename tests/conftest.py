"""Settings every test shares, applied before any test module is imported."""

from __future__ import annotations

import atexit
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.browser import BROWSER_USE_OFFLINE

# Before anything imports huggingface_hub: no test may reach the network, and a model
# name that is not on disk must fail at once instead of retrying the hub for a minute.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

# browser-use reads these when it is imported and on every access of its CONFIG (see
# tests/support/browser.py); each browser-use test also gets a config folder of its own.
os.environ.update(BROWSER_USE_OFFLINE)

# Rich wraps the CLI's output at the terminal's width (80 when there is none), and a path under
# an xdist worker's temporary folder (.../popen-gw0/...) is long enough to be broken mid-word.
os.environ["COLUMNS"] = "200"

# The private servers (Redis, Redis Cluster, RabbitMQ) every test process starts for itself,
# the stand-in Opik server, and the CLI tests' environment.
pytest_plugins = ["tests.support.fixtures", "tests.support.opik", "tests.support.cli_env"]


def _exit_without_finalizing() -> None:
    """The last exit handler of an xdist worker: end the process without tearing the interpreter down.

    A worker that loaded litellm, torch and the Opik SDK spends 2-3 s freeing them one object
    at a time after its tests and fixtures are done, and the run waits for its slowest worker.
    Registered before the tests import anything, so it runs after their exit handlers.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def pytest_configure(config: pytest.Config) -> None:
    """In an xdist worker (it has ``workerinput``), end the process fast (see above)."""
    if hasattr(config, "workerinput"):
        atexit.register(_exit_without_finalizing)


DRILLS = Path(__file__).parent / "drills"
# The fixtures that start headless chromium; a test using one is a browser test.
BROWSER_FIXTURES = {"browser_session"}
# The marks of the long tests, in the order they are handed out (before every unmarked test).
LONG_FIRST = ("drill", "browser", "slow")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the drills and browser tests (make test-fast leaves them out); put the long tests first.

    xdist hands tests out in this order: the drills, then the browser tests, then the other slow
    ones, so the longest start while the short ones fill the gaps at the end, instead of a long
    one starting last and holding the whole run up.
    """
    for item in items:
        if item.path.is_relative_to(DRILLS):
            item.add_marker(pytest.mark.drill)
        if BROWSER_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.browser)
    items.sort(key=lambda item: [item.get_closest_marker(mark) is None for mark in LONG_FIRST])


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """With ``--dist load``, tests sharing a costly session fixture share a worker (support/scheduling.py)."""
    if config.getvalue("dist") != "load":
        return None
    from tests.support.scheduling import make_scheduler

    return make_scheduler(config, log)
