"""Opik tracing against a local stub of the Opik server: what the real SDK sends, and when nothing."""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass
from typing import Any

import pytest

from ace_workers.core import ACEStepContext, Sample, SimpleEnvironment, Skillbook, SkillbookView
from ace_workers.errors import MissingExtraError, TracingSetupError
from ace_workers.observability import register_opik_litellm_callback
from ace_workers.runners import ACELiteLLM
from ace_workers.sim import SimulatedLLM, make_tasks
from ace_workers.steps import OpikStep
from pipeline import SampleResult
from tests.support.opik import NetworkGuard, OpikStub

PROJECT = "ace-opik-test"
SAMPLES = 4
INSTALL_HINT = "pip install 'ace-workers[opik]'"


@dataclass
class LearnedRun:
    """An ACELiteLLM(opik=True) run over the sim tasks, and what reached the stub."""

    samples: list[Sample]
    results: list[SampleResult[ACEStepContext]]
    traces: list[dict[str, Any]]
    flushed: bool


@pytest.fixture
def learned(opik_env: OpikStub) -> LearnedRun:
    samples = make_tasks(SAMPLES)
    ace = ACELiteLLM(SimulatedLLM(), opik=True, opik_project=PROJECT, opik_tags=["sim"])
    results = ace.learn(samples, environment=SimpleEnvironment())
    flushed = ace.flush_traces()
    return LearnedRun(samples, results, opik_env.traces(), flushed)


def by_question(run: LearnedRun) -> dict[str, dict[str, Any]]:
    return {trace["input"]["question"]: trace for trace in run.traces}


def ctx_of(run: LearnedRun, question: str) -> ACEStepContext:
    (result,) = [r for r in run.results if r.output is not None and r.output.sample.question == question]
    assert result.output is not None
    return result.output


# -- ACELiteLLM(opik=True): one trace per sample ----------------------------------------


def test_every_sample_of_a_run_becomes_one_trace(learned: LearnedRun) -> None:
    assert len(learned.traces) == SAMPLES


def test_flush_reports_every_trace_sent(learned: LearnedRun) -> None:
    assert learned.flushed is True


def test_the_traces_go_to_the_project_asked_for(learned: LearnedRun) -> None:
    assert {trace["project_name"] for trace in learned.traces} == {PROJECT}


def test_the_traces_carry_the_tags_asked_for(learned: LearnedRun) -> None:
    assert all(trace["tags"] == ["sim"] for trace in learned.traces)


def test_each_trace_input_is_its_samples_question(learned: LearnedRun) -> None:
    assert sorted(by_question(learned)) == sorted(sample.question for sample in learned.samples)


def test_each_trace_output_is_the_agents_answer(learned: LearnedRun) -> None:
    for question, trace in by_question(learned).items():
        agent_output = ctx_of(learned, question).agent_output
        assert agent_output is not None
        assert trace["output"]["answer"] == agent_output.final_answer


def test_each_trace_carries_the_reflections_key_insight(learned: LearnedRun) -> None:
    for question, trace in by_question(learned).items():
        reflection = ctx_of(learned, question).reflection
        assert reflection is not None
        assert reflection.key_insight
        assert trace["metadata"]["reflection"]["key_insight"] == reflection.key_insight


def test_each_trace_carries_the_skill_managers_operations(learned: LearnedRun) -> None:
    for question, trace in by_question(learned).items():
        manager_output = ctx_of(learned, question).skill_manager_output
        assert manager_output is not None
        logged = trace["metadata"]["operations"]
        assert [(op["type"], op.get("content", "")) for op in logged] == [
            (op.type, op.content) for op in manager_output.update.operations
        ]


def test_the_run_made_skillbook_operations_to_trace(learned: LearnedRun) -> None:
    # Guards the test above against passing on empty lists.
    assert sum(trace["metadata"]["operation_count"] for trace in learned.traces) > 0


def test_each_trace_carries_where_the_sample_sits_in_the_run(learned: LearnedRun) -> None:
    indices = sorted(trace["metadata"]["global_sample_index"] for trace in learned.traces)
    assert indices == list(range(1, SAMPLES + 1))


def test_each_trace_names_its_sample_id(learned: LearnedRun) -> None:
    assert sorted(trace["metadata"]["sample_id"] for trace in learned.traces) == sorted(
        str(sample.id) for sample in learned.samples
    )


def test_the_sdk_reached_only_the_stub(learned: LearnedRun, network_guard: NetworkGuard) -> None:
    assert network_guard.outside_loopback() == []


def test_the_sdk_connected_to_the_stub_port(
    learned: LearnedRun, network_guard: NetworkGuard, opik_stub: OpikStub
) -> None:
    assert {port for _, port in network_guard.connections} == {opik_stub.port}


def test_learn_from_feedback_is_traced_with_the_question_and_the_feedback(opik_env: OpikStub) -> None:
    ace = ACELiteLLM(SimulatedLLM(), opik=True, opik_project=PROJECT)
    (task,) = make_tasks(1)
    ace.ask(task.question, task.context)
    assert ace.learn_from_feedback("Wrong, see the rule.", ground_truth=task.ground_truth)
    assert ace.flush_traces()
    (trace,) = opik_env.traces()
    assert (trace["input"]["question"], trace["input"]["feedback"]) == (task.question, "Wrong, see the rule.")


def test_learn_from_traces_is_traced_once_per_trace(opik_env: OpikStub) -> None:
    ace = ACELiteLLM(SimulatedLLM(), opik=True, opik_project=PROJECT)
    traces = [{"question": s.question, "answer": "0", "ground_truth": s.ground_truth} for s in make_tasks(3)]
    ace.learn_from_traces(traces)
    assert ace.flush_traces()
    assert sorted(t["input"]["question"] for t in opik_env.traces()) == sorted(t["question"] for t in traces)


# -- OpikStep used directly ---------------------------------------------------------------


def test_opik_step_reads_the_environment_it_is_built_in(
    opik_env: OpikStub, network_guard: NetworkGuard
) -> None:
    step = OpikStep(project_name=PROJECT)
    step(ACEStepContext(skillbook=SkillbookView(Skillbook()), trace={"question": "q?", "answer": "a"}))
    assert step.flush()
    (trace,) = opik_env.traces()
    assert (trace["input"], trace["output"]) == ({"question": "q?"}, {"answer": "a"})


# -- switched off: OPIK_DISABLED, opik missing ---------------------------------------------


def test_opik_disabled_sends_nothing_from_a_whole_run(
    opik_env: OpikStub, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPIK_DISABLED", "true")
    ace = ACELiteLLM(SimulatedLLM(), opik=True, opik_project=PROJECT)
    ace.learn(make_tasks(2), environment=SimpleEnvironment())
    ace.flush_traces()
    assert opik_env.requests == []


def test_opik_disabled_registers_no_litellm_callback(
    opik_env: OpikStub, monkeypatch: pytest.MonkeyPatch
) -> None:
    import litellm

    monkeypatch.setenv("OPIK_DISABLED", "true")
    assert register_opik_litellm_callback(project_name=PROJECT) is False
    assert litellm.callbacks == []


def test_opik_disabled_is_logged_once(
    opik_env: OpikStub, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("OPIK_DISABLED", "1")
    with caplog.at_level(logging.INFO, logger="ace_workers.observability.opik"):
        OpikStep()
        OpikStep()
    said = [r for r in caplog.records if "OPIK_DISABLED" in r.getMessage() and r.levelno >= logging.INFO]
    assert len(said) == 1


@pytest.fixture
def opik_missing(opik_env: OpikStub, monkeypatch: pytest.MonkeyPatch) -> None:
    """As if the opik package were not installed: ``import opik`` raises ImportError."""
    monkeypatch.setitem(sys.modules, "opik", None)


@pytest.mark.usefixtures("opik_missing")
def test_without_opik_the_step_is_a_no_op() -> None:
    step = OpikStep()
    ctx = ACEStepContext(skillbook=SkillbookView(Skillbook()), trace={"question": "q?"})
    assert (step.enabled, step(ctx) is ctx, step.flush()) == (False, True, True)


@pytest.mark.usefixtures("opik_missing")
def test_without_opik_the_step_says_which_extra_to_install(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="ace_workers.observability.opik"):
        OpikStep()
    assert INSTALL_HINT in caplog.text


@pytest.mark.usefixtures("opik_missing")
def test_without_opik_a_strict_step_raises_an_import_error_naming_the_extra() -> None:
    with pytest.raises(ImportError, match=r"pip install 'ace-workers\[opik\]'"):
        OpikStep(strict=True)


@pytest.mark.usefixtures("opik_missing")
def test_without_opik_acelitellm_with_opik_fails_when_built() -> None:
    with pytest.raises(MissingExtraError, match=r"ace-workers\[opik\]"):
        ACELiteLLM(SimulatedLLM(), opik=True)


@pytest.mark.usefixtures("opik_missing")
def test_without_opik_the_litellm_callback_is_not_registered() -> None:
    assert register_opik_litellm_callback() is False


@pytest.mark.usefixtures("opik_missing")
def test_without_opik_a_strict_litellm_callback_raises() -> None:
    with pytest.raises(ImportError, match=r"ace-workers\[opik\]"):
        register_opik_litellm_callback(strict=True)


# -- strict: a client that cannot log fails at construction --------------------------------


def test_strict_without_an_api_key_for_comet_cloud_raises_a_runtime_error(
    opik_env: OpikStub, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPIK_URL_OVERRIDE")
    monkeypatch.delenv("OPIK_API_KEY")
    with pytest.raises(RuntimeError, match="API key"):
        ACELiteLLM(SimulatedLLM(), opik=True)


def test_strict_with_an_invalid_sdk_setting_raises_a_setup_error(
    opik_env: OpikStub, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPIK_BACKGROUND_WORKERS", "many")
    with pytest.raises(TracingSetupError):
        OpikStep(strict=True)


def test_not_strict_with_an_invalid_sdk_setting_is_a_no_op(
    opik_env: OpikStub, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPIK_BACKGROUND_WORKERS", "many")
    assert OpikStep().enabled is False
