"""The learning cost: a step's usage summed from its new role outputs, and USD per sample where priced.

The simulated LLM prices nothing, so a priced batch is made here as a worker records one:
the step runs of its samples, with the cost a pricing provider puts on each output's ``raw``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from ace_workers.core.context import ACEStepContext
from ace_workers.core.outputs import AgentOutput, ReflectorOutput
from ace_workers.distributed.service import Service
from ace_workers.distributed.store.step_stats import StepRun
from ace_workers.observability.metrics import llm_usage
from ace_workers.sim import failure_traces
from tests.support.console import RunningConsole, running_console


def output_with(model: type[AgentOutput] | type[ReflectorOutput], raw: dict[str, object]) -> Any:
    """A role output carrying the provider metadata ``raw``, as a client leaves it."""
    fields = {"reasoning": "r", "final_answer": "a"} if model is AgentOutput else {"reasoning": "r"}
    return model.model_validate(fields).model_copy(update={"raw": raw})


def test_a_steps_usage_sums_its_new_outputs_only() -> None:
    carried = output_with(
        AgentOutput, {"usage": {"prompt_tokens": 1000, "completion_tokens": 1000}, "cost": 9}
    )
    before = ACEStepContext(agent_output=carried)
    after = before.replace(
        reflection=output_with(
            ReflectorOutput, {"usage": {"prompt_tokens": 30, "completion_tokens": 7}, "cost": 0.25}
        )
    )

    usage = llm_usage(before, after)

    assert (usage.prompt_tokens, usage.completion_tokens) == (30, 7)
    assert usage.cost == pytest.approx(0.25)


def test_an_unpriced_output_leaves_the_cost_unknown() -> None:
    after = ACEStepContext(
        agent_output=output_with(AgentOutput, {"usage": {"prompt_tokens": 5, "completion_tokens": 2}})
    )
    assert llm_usage(ACEStepContext(), after).cost is None


@pytest.fixture
def idle_console(idle_service: Service) -> Iterator[RunningConsole]:
    with running_console(idle_service) as running:
        yield running


def test_a_priced_batch_gets_a_cost_per_sample_and_its_plot(
    idle_console: RunningConsole, idle_service: Service
) -> None:
    handle = idle_service.producer.enqueue_traces(failure_traces(2), "priced")
    batches = idle_service.runtime.batches
    for sample in (1, 2):
        batches.record_step(handle.batch_id, 1, sample, StepRun(0, "ReflectStep", 0.1, 100, 20, 0.02))
        batches.record_done(handle.batch_id, 1, sample, {"trace": {}}, step=StepRun(1, "ApplyStep", 0.01))

    with idle_console.client() as client:
        one = client.get(f"/api/batches/{handle.batch_id}").json()
        index = client.get("/api/batches").json()
        page = client.get("/batches").text

    assert one["usage"]["cost"] == pytest.approx(0.04)
    assert one["usage"]["cost_per_sample"] == pytest.approx(0.02)
    assert one["usage"]["tokens_per_sample"] == 120
    (line,) = index["cost_series"]["cost"]
    assert [y for _, y in line["points"]] == [pytest.approx(0.02)]
    assert 'id="cost-per-sample"' in page
