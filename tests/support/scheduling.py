"""How xdist shares the suite out: tests that share a costly session fixture go to one worker.

xdist's own ``--dist loadgroup`` reads ``xdist_group`` marks by appending the group to a
test's node id; pytest 9.2 keeps the id elsewhere (``Node._id``), so with pytest-xdist 3.8
every group is silently lost. This scheduler groups by path instead, which the controller
can see without collecting: every other test is a unit of its own, as with ``--dist load``.
"""

from __future__ import annotations

from typing import Any

from xdist.scheduler import LoadScopeScheduling

# Tests under these paths (or node ids) share one worker, so what they load is loaded once
# instead of once per worker. "models": the MiniLM model (torch import and model load, 5-10 s
# of CPU per process), litellm (about 5 s per process, with the Opik SDK it brings); one group,
# as some tests need both. "rabbitmq": a RabbitMQ node (about 5 s to boot). "mcp-stdio": an MCP
# server the tests share (over a second of CPU to start).
SHARED_FIXTURE_PATHS = {
    "tests/dedup/": "models",
    "tests/distributed/worker/test_dedup_on_workers.py": "models",
    "tests/cli/test_nightly_cli.py::test_a_night_with_deduplication": "models",
    "tests/cli/test_commands.py::test_skillbook_dedup_finds_paraphrases": "models",
    "tests/cli/test_lifecycle_cli.py::test_skillbook_dedup_leaves_a_pinned": "models",
    "tests/observability/opik_tracing/": "models",  # with a stand-in Opik server
    "tests/providers/test_litellm_client.py": "models",
    "tests/providers/test_instructor_client.py": "models",
    "tests/providers/test_model_check.py": "models",
    "tests/providers/test_litellm_gate.py": "models",
    "tests/distributed/tenancy/test_provider_storm.py": "models",
    "tests/runners/test_from_model.py": "models",
    "tests/runners/test_options.py::test_from_model": "models",
    "tests/cli/test_models_and_failures.py": "models",
    "tests/distributed/worker/test_rejected_requests.py": "models",
    "tests/distributed/worker/test_rr_on_workers.py::test_the_recursive_reflectors_llm_metrics": "models",
    "tests/integrations/langchain/": "models",  # langchain_core: a second more per process
    "tests/integrations/browser_use/test_to_trace.py": "models",  # browser_use: a second more too
    "tests/spec_examples/test_usage_examples.py": "models",
    "tests/spec_examples/test_rr_opik_example.py": "models",
    "tests/steps/test_contracts.py::test_step_contract_matches_the_spec_table[OpikStep]": "models",
    "tests/steps/test_contracts.py::test_steps_keep_no_state_between_calls[OpikStep]": "models",
    "tests/docs/test_examples.py::test_the_opik_example": "models",
    "tests/distributed/worker/test_rabbitmq.py": "rabbitmq",
    "tests/mcp/test_mcp_stdio_input.py": "mcp-stdio",
    # One build of the sdist and the wheel, and one virtualenv with the wheel installed (some 10 s).
    "tests/packaging/": "packaging",
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
