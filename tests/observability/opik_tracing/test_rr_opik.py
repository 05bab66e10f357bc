"""RROpikStep: an RR reflection's iterations reach the stub Opik server as child spans of one trace."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from ace_workers.core import ACEStepContext, ReflectorOutput, Sample, Skillbook, SkillbookView
from ace_workers.rr.opik import RROpikStep
from tests.support.opik import NetworkGuard, OpikStub

PROJECT = "ace-rr-test"
RR_TRACE: dict[str, Any] = {
    "iterations": [
        {
            "iteration": 1,
            "code": "print(len(trace['answer']))",
            "stdout": "2\n",
            "stderr": "",
            "error": None,
            "final_called": False,
            "killed": None,
            "duration_s": 0.25,
        },
        {
            "iteration": 2,
            "code": "FINAL({'key_insight': 'check the rule'})",
            "stdout": "",
            "stderr": "warning: slow\n",
            "error": None,
            "final_called": True,
            "killed": None,
            "duration_s": 0.5,
        },
    ],
    "iterations_used": 2,
    "max_iterations": 10,
    "final_called": True,
}


def rr_context(raw: dict[str, Any]) -> ACEStepContext:
    reflection = ReflectorOutput(reasoning="looked at the trace", key_insight="check the rule", raw=raw)
    return ACEStepContext(
        sample=Sample(question="What is 2 + 2?", ground_truth="4"),
        skillbook=SkillbookView(Skillbook()),
        reflection=reflection,
        global_sample_index=3,
    )


@pytest.fixture
def rr_logged(opik_env: OpikStub) -> OpikStub:
    step = RROpikStep(project_name=PROJECT, tags=["rr"])
    ctx = rr_context({"rr_trace": RR_TRACE})
    assert step(ctx) is ctx
    assert step.flush()
    return opik_env


def test_an_rr_reflection_becomes_one_trace(rr_logged: OpikStub) -> None:
    assert [trace["name"] for trace in rr_logged.traces()] == ["rr_reflect"]


def test_each_iteration_becomes_a_span_named_after_it(rr_logged: OpikStub) -> None:
    assert sorted(span["name"] for span in rr_logged.spans()) == ["rr_iteration_1", "rr_iteration_2"]


def test_the_spans_are_children_of_the_trace(rr_logged: OpikStub) -> None:
    (trace,) = rr_logged.traces()
    assert {span["trace_id"] for span in rr_logged.spans()} == {trace["id"]}


def test_the_spans_and_the_trace_go_to_the_project(rr_logged: OpikStub) -> None:
    projects = {item["project_name"] for item in [*rr_logged.traces(), *rr_logged.spans()]}
    assert projects == {PROJECT}


def test_each_span_input_is_the_code_sent_to_the_sandbox(rr_logged: OpikStub) -> None:
    inputs = {span["name"]: span["input"] for span in rr_logged.spans()}
    assert inputs == {
        "rr_iteration_1": {"code": "print(len(trace['answer']))"},
        "rr_iteration_2": {"code": "FINAL({'key_insight': 'check the rule'})"},
    }


def test_each_span_output_is_what_the_sandbox_printed(rr_logged: OpikStub) -> None:
    outputs = {span["name"]: span["output"] for span in rr_logged.spans()}
    assert outputs["rr_iteration_2"] == {"stdout": "", "stderr": "warning: slow\n", "error": None}


def test_each_span_metadata_says_if_final_was_called_and_how_long_it_took(rr_logged: OpikStub) -> None:
    metadata = {span["name"]: span["metadata"] for span in rr_logged.spans()}
    assert metadata["rr_iteration_2"] == {"final_called": True, "killed": None, "duration_s": 0.5}


def test_the_spans_follow_each_other_in_iteration_order(rr_logged: OpikStub) -> None:
    spans = {span["name"]: span for span in rr_logged.spans()}
    assert spans["rr_iteration_1"]["end_time"] <= spans["rr_iteration_2"]["start_time"]


def test_the_trace_metadata_carries_the_loop_summary(rr_logged: OpikStub) -> None:
    (trace,) = rr_logged.traces()
    summary = {key: trace["metadata"][key] for key in ("iterations_used", "max_iterations", "final_called")}
    assert summary == {"iterations_used": 2, "max_iterations": 10, "final_called": True}


def test_the_trace_input_is_the_question_and_its_output_the_key_insight(rr_logged: OpikStub) -> None:
    (trace,) = rr_logged.traces()
    assert trace["input"] == {"question": "What is 2 + 2?"}
    assert trace["output"]["key_insight"] == "check the rule"


def test_the_sdk_reached_only_the_stub(rr_logged: OpikStub, network_guard: NetworkGuard) -> None:
    assert network_guard.outside_loopback() == []


def test_without_an_rr_trace_nothing_is_sent(opik_env: OpikStub) -> None:
    step = RROpikStep(project_name=PROJECT)
    ctx = rr_context({})
    assert step(ctx) is ctx
    assert step.flush()
    assert opik_env.traces() == []


def test_opik_disabled_sends_nothing(opik_env: OpikStub, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPIK_DISABLED", "true")
    step = RROpikStep(project_name=PROJECT)
    step(rr_context({"rr_trace": RR_TRACE}))
    step.flush()
    assert opik_env.requests == []


def test_without_opik_the_step_is_a_no_op(opik_env: OpikStub, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "opik", None)
    step = RROpikStep()
    ctx = rr_context({"rr_trace": RR_TRACE})
    assert (step.enabled, step(ctx) is ctx) == (False, True)


def test_without_opik_a_strict_step_raises_an_import_error_naming_the_extra(
    opik_env: OpikStub, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "opik", None)
    with pytest.raises(ImportError, match=r"pip install 'ace-workers\[opik\]'"):
        RROpikStep(strict=True)
