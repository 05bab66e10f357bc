"""The Recursive Reflector on the simulated LLM: it answers the RR prompt and learns offline."""

from __future__ import annotations

import pytest

from ace_workers.core import AgentOutput, SimpleEnvironment, Skillbook, SkillbookView
from ace_workers.roles import Reflector
from ace_workers.rr import RRConfig, RRStep
from ace_workers.runners import ACELiteLLM
from ace_workers.sim import SimulatedLLM, failure_traces, make_tasks
from ace_workers.sim.recursive import SIM_MARKER

pytestmark = pytest.mark.slow  # each iteration starts a sandbox interpreter


def test_rr_with_the_simulated_llm_learns_every_topic_of_the_sim_tasks() -> None:
    tasks = make_tasks(10, topics=5)
    ace = ACELiteLLM(SimulatedLLM(), reflector=RRStep(SimulatedLLM()), environment=SimpleEnvironment())
    assert ace.ask(tasks[0].question) != tasks[0].ground_truth
    results = ace.learn(tasks)
    assert all(r.ok for r in results), [r.error for r in results if not r.ok]
    assert len(ace.skillbook) == 5
    assert [ace.ask(t.question) for t in tasks] == [t.ground_truth for t in tasks]


def test_each_simulated_reflection_went_through_two_sandbox_runs() -> None:
    ace = ACELiteLLM(SimulatedLLM(), reflector=RRStep(SimulatedLLM()), environment=SimpleEnvironment())
    results = ace.learn(make_tasks(3, topics=3))
    traces = [r.output.reflection.raw["rr_trace"] for r in results if r.output and r.output.reflection]
    assert [t["iterations_used"] for t in traces] == [2, 2, 2]
    assert all(t["iterations"][0]["stdout"].startswith(SIM_MARKER) for t in traces)


def test_rr_learns_from_recorded_traces_with_the_simulated_llm() -> None:
    traces = failure_traces(10)
    ace = ACELiteLLM(SimulatedLLM(), reflector=RRStep(SimulatedLLM(), RRConfig(max_iterations=3)))
    results = ace.learn_from_traces(traces)
    assert all(r.ok for r in results)
    assert len({s.section for s in ace.skillbook.skills()}) == 5


@pytest.mark.parametrize(("answer", "ground_truth"), [("5617", "7165"), ("7165", "7165"), ("5617", "9999")])
def test_the_simulated_rr_reflection_equals_the_single_pass_one(answer: str, ground_truth: str) -> None:
    skillbook = Skillbook()
    cited = skillbook.add_skill("zorb", "For zorb questions, echo the input.").id
    inputs = {
        "question": "Solve the zorb puzzle. Input: 5617",
        "agent_output": AgentOutput(reasoning=f"per [{cited}]", final_answer=answer, skill_ids=[cited]),
        "skillbook": SkillbookView(skillbook),
        "ground_truth": ground_truth,
        "feedback": "",
    }
    single = Reflector(SimulatedLLM()).reflect(**inputs)  # type: ignore[arg-type]
    recursive = RRStep(SimulatedLLM()).reflect(**inputs)  # type: ignore[arg-type]
    assert recursive.model_dump() == single.model_dump()  # raw (usage, rr_trace) left out
