"""How xdist shares the suite out: tests that share a costly session fixture go to one worker.

xdist's own ``--dist loadgroup`` reads ``xdist_group`` marks by appending the group to a
test's node id; pytest 9.2 keeps the id elsewhere (``Node._id``), so with pytest-xdist 3.8
every group is silently lost. This scheduler groups by path instead, which the controller
can see without collecting: every other test is a unit of its own, as with ``--dist load``.
"""

from __future__ import annotations

from typing import Any

from xdist.scheduler import LoadScopeScheduling

# Tests under these paths share one worker, so the fixture is built once instead of once per
# worker: the MiniLM model (torch import and model load, 10-20 s of CPU each), the Opik SDK, a
# RabbitMQ node.
SHARED_FIXTURE_PATHS = {
    "tests/dedup/": "minilm",
    "tests/observability/opik_tracing/": "opik",  # the opik SDK and litellm, and a stand-in server
    "tests/distributed/worker/test_rabbitmq.py": "rabbitmq",
}


class SharedFixtureScheduling(LoadScopeScheduling):  # type: ignore[misc]
    """Load scheduling, one test at a time, but the tests of a shared fixture as one unit.

    LoadScopeScheduling hands out the biggest units first, then the rest in collection
    order (tests/conftest.py puts the drills at its head).
    """

    def _split_scope(self, nodeid: str) -> str:
        for path, group in SHARED_FIXTURE_PATHS.items():
            if nodeid.startswith(path):
                return group
        return nodeid


def make_scheduler(config: Any, log: Any) -> SharedFixtureScheduling:
    """The scheduler for ``--dist load`` (see the module docstring)."""
    return SharedFixtureScheduling(config, log)
