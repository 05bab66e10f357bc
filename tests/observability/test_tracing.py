"""In-process tracing: one trace per sample, a span per step below it, GenAI spans per LLM call."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from ace_workers.core import ACEStepContext, SimpleEnvironment, SkillbookView
from ace_workers.observability.tracing import configure_tracing, otlp_traces_url, shutdown_tracing
from ace_workers.roles import Agent, Reflector, SkillManager
from ace_workers.runners import ACE, TraceAnalyser
from ace_workers.sim import SimulatedLLM, failure_traces, make_tasks
from tests.support.tracing import by_trace, memory_spans, named, parent_id, span_id, trace_id


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """Every span ace-workers makes during the test (see memory_spans)."""
    with memory_spans() as exporter:
        yield exporter


ACE_STEPS = ["AgentStep", "EvaluateStep", "ReflectStep", "TagStep", "UpdateStep", "ApplyStep"]


class Explode:
    """A last step that fails every sample."""

    requires: frozenset[str] = frozenset()
    provides: frozenset[str] = frozenset()

    def __call__(self, ctx: ACEStepContext) -> ACEStepContext:
        raise RuntimeError("boom")


def make_ace(llm: SimulatedLLM, **options: object) -> ACE:
    return ACE.from_roles(
        agent=Agent(llm),
        reflector=Reflector(llm),
        skill_manager=SkillManager(llm),
        environment=SimpleEnvironment(),
        **options,  # type: ignore[arg-type]
    )


def step_names(spans: list[ReadableSpan]) -> list[str]:
    steps = sorted(named(spans, "ace.step "), key=lambda span: span.attributes["ace.step.index"])  # type: ignore[index]
    return [span.name.removeprefix("ace.step ") for span in steps]


def test_each_sample_of_an_ace_run_is_one_trace(spans: InMemorySpanExporter) -> None:
    make_ace(SimulatedLLM()).run(make_tasks(3))

    finished = list(spans.get_finished_spans())
    samples = named(finished, "ace.sample")
    assert len(samples) == 3
    assert len({trace_id(span) for span in samples}) == 3
    assert set(by_trace(finished)) == {trace_id(span) for span in samples}


def test_a_sample_span_says_which_sample_of_which_epoch(spans: InMemorySpanExporter) -> None:
    make_ace(SimulatedLLM()).run(make_tasks(2), epochs=2)

    samples = named(list(spans.get_finished_spans()), "ace.sample")
    seen = sorted((span.attributes["ace.epoch"], span.attributes["ace.sample.index"]) for span in samples)  # type: ignore[index]
    assert seen == [(1, 1), (1, 2), (2, 1), (2, 2)]
    assert {span.attributes["ace.runner"] for span in samples} == {"ACE"}  # type: ignore[index]


def test_every_step_has_a_span_below_its_sample(spans: InMemorySpanExporter) -> None:
    make_ace(SimulatedLLM()).run(make_tasks(2))

    for spans_of_trace in by_trace(list(spans.get_finished_spans())).values():
        (sample,) = named(spans_of_trace, "ace.sample")
        assert step_names(spans_of_trace) == ACE_STEPS
        assert {parent_id(span) for span in named(spans_of_trace, "ace.step ")} == {span_id(sample)}


def test_llm_calls_are_genai_spans_below_the_step_that_made_them(spans: InMemorySpanExporter) -> None:
    make_ace(SimulatedLLM()).run(make_tasks(1))

    finished = list(spans.get_finished_spans())
    steps = {span_id(span): span.name for span in named(finished, "ace.step ")}
    calls = named(finished, "chat ")
    assert sorted(steps[parent_id(call)] for call in calls) == [  # type: ignore[index]
        "ace.step AgentStep",
        "ace.step ReflectStep",
        "ace.step UpdateStep",
    ]
    for call in calls:
        attributes = call.attributes or {}
        assert call.name == "chat simulated"
        assert call.kind is trace.SpanKind.CLIENT
        assert attributes["gen_ai.operation.name"] == "chat"
        assert attributes["gen_ai.provider.name"] == "simulated"
        assert attributes["gen_ai.system"] == "simulated"
        assert attributes["gen_ai.request.model"] == "simulated"
        assert attributes["gen_ai.usage.input_tokens"] > 0  # type: ignore[operator]
        assert attributes["gen_ai.usage.output_tokens"] > 0  # type: ignore[operator]


def test_llm_spans_report_the_tokens_the_client_reported(spans: InMemorySpanExporter) -> None:
    llm = SimulatedLLM()
    make_ace(llm).run(make_tasks(2))

    calls = named(list(spans.get_finished_spans()), "chat ")
    assert sum(call.attributes["gen_ai.usage.input_tokens"] for call in calls) == llm.usage["prompt_tokens"]  # type: ignore[index, misc]
    assert (
        sum(call.attributes["gen_ai.usage.output_tokens"] for call in calls)  # type: ignore[index, misc]
        == llm.usage["completion_tokens"]
    )


def test_a_failing_step_marks_its_span_and_its_sample_as_errors(spans: InMemorySpanExporter) -> None:
    results = make_ace(SimulatedLLM(), extra_steps=[Explode()]).run(make_tasks(1))
    assert results[0].error is not None

    finished = list(spans.get_finished_spans())
    (failed,) = named(finished, "ace.step Explode")
    assert failed.status.status_code is StatusCode.ERROR
    assert [event.attributes["exception.type"] for event in failed.events] == ["RuntimeError"]  # type: ignore[index]
    (sample,) = named(finished, "ace.sample")
    assert sample.status.status_code is StatusCode.ERROR
    assert sample.attributes["ace.failed_at"] == "Explode"  # type: ignore[index]


def test_steps_that_succeed_are_not_errors(spans: InMemorySpanExporter) -> None:
    make_ace(SimulatedLLM(), extra_steps=[Explode()]).run(make_tasks(1))

    steps = named(list(spans.get_finished_spans()), "ace.step ")
    assert {span.name for span in steps if span.status.status_code is StatusCode.ERROR} == {
        "ace.step Explode"
    }


def test_a_failed_llm_call_marks_its_span_and_its_step(spans: InMemorySpanExporter) -> None:
    make_ace(SimulatedLLM(failure_rate=1.0)).run(make_tasks(1))

    finished = list(spans.get_finished_spans())
    (call,) = named(finished, "chat ")
    (agent,) = named(finished, "ace.step AgentStep")
    assert call.status.status_code is StatusCode.ERROR
    assert call.attributes["error.type"] == "LLMError"  # type: ignore[index]
    assert agent.status.status_code is StatusCode.ERROR
    assert parent_id(call) == span_id(agent)


def test_trace_analyser_traces_samples_learned_in_background_threads(spans: InMemorySpanExporter) -> None:
    TraceAnalyser.from_roles(
        reflector=Reflector(SimulatedLLM()), skill_manager=SkillManager(SimulatedLLM())
    ).run(failure_traces(4), workers=2)

    traces = by_trace(list(spans.get_finished_spans()))
    assert len(traces) == 4
    for spans_of_trace in traces.values():
        assert step_names(spans_of_trace) == ["ReflectStep", "TagStep", "UpdateStep", "ApplyStep"]
        assert len(named(spans_of_trace, "chat ")) == 2


def test_a_run_inside_a_span_of_the_caller_links_each_sample_to_it(spans: InMemorySpanExporter) -> None:
    caller = TracerProvider().get_tracer("caller")
    with caller.start_as_current_span("experiment") as experiment:
        make_ace(SimulatedLLM()).run(make_tasks(2))

    samples = named(list(spans.get_finished_spans()), "ace.sample")
    assert all(span.parent is None for span in samples)
    assert [[link.context.span_id for link in span.links] for span in samples] == [
        [experiment.get_span_context().span_id]
    ] * 2


def test_run_async_traces_each_sample(spans: InMemorySpanExporter) -> None:
    ace = make_ace(SimulatedLLM())
    contexts = [ACEStepContext(sample=task, skillbook=SkillbookView(ace.skillbook)) for task in make_tasks(2)]
    asyncio.run(ace.pipeline.run_async(contexts, workers=2))
    ace.wait_for_background()

    traces = by_trace(list(spans.get_finished_spans()))
    assert len(traces) == 2
    assert all(step_names(spans_of_trace) == ACE_STEPS for spans_of_trace in traces.values())


def test_configure_tracing_is_idempotent() -> None:
    exporter = InMemorySpanExporter()
    try:
        first = configure_tracing("http://127.0.0.1:1", exporter=exporter, set_global=False)
        again = configure_tracing("http://127.0.0.1:1", exporter=InMemorySpanExporter(), set_global=False)
        assert again is first
    finally:
        shutdown_tracing()


def test_configured_tracing_exports_the_spans_of_a_run() -> None:
    exporter = InMemorySpanExporter()
    try:
        configure_tracing(exporter=exporter, service_name="ace-workers-test", set_global=False)
        make_ace(SimulatedLLM()).run(make_tasks(1))
    finally:
        shutdown_tracing()  # flushes the batch processor

    finished = exporter.get_finished_spans()
    assert len(named(list(finished), "ace.sample")) == 1
    assert {span.resource.attributes["service.name"] for span in finished} == {"ace-workers-test"}


@pytest.mark.parametrize(
    ("endpoint", "url"),
    [
        ("http://collector:4318", "http://collector:4318/v1/traces"),
        ("http://collector:4318/", "http://collector:4318/v1/traces"),
        ("http://collector:4318/v1/traces", "http://collector:4318/v1/traces"),
    ],
)
def test_an_endpoint_is_a_collector_base_url(endpoint: str, url: str) -> None:
    assert otlp_traces_url(endpoint) == url


WITHOUT_OTEL = """
import sys
sys.modules["opentelemetry"] = None  # as if the otel extra were not installed
import ace_workers
from ace_workers.observability import tracing
from ace_workers.roles import Agent, Reflector, SkillManager
from ace_workers.runners import ACE
from ace_workers.sim import SimulatedLLM, make_tasks

assert not tracing.tracing_available()
llm = SimulatedLLM()
ace = ACE.from_roles(agent=Agent(llm), reflector=Reflector(llm), skill_manager=SkillManager(llm))
assert ace.pipeline.hooks == []
assert all(result.ok for result in ace.run(make_tasks(2)))
try:
    tracing.configure_tracing("http://127.0.0.1:4318")
except ImportError as exc:
    print(exc)
else:
    raise AssertionError("configure_tracing worked without OpenTelemetry")
"""


@pytest.mark.slow
def test_without_opentelemetry_runs_untraced_and_asking_for_tracing_names_the_extra() -> None:
    result = subprocess.run([sys.executable, "-c", WITHOUT_OTEL], capture_output=True, text=True, timeout=60)

    assert result.returncode == 0, result.stderr
    assert "pip install 'ace-workers[otel]'" in result.stdout


def test_the_recursive_reflectors_llm_turns_are_spans_under_the_reflect_step(
    spans: InMemorySpanExporter,
) -> None:
    from ace_workers.rr import RRStep

    llm = SimulatedLLM()
    analyser = TraceAnalyser.from_roles(reflector=RRStep(llm), skill_manager=SkillManager(llm))
    analyser.run(failure_traces(1))

    finished = list(spans.get_finished_spans())
    (reflect,) = named(finished, "ace.step ReflectStep")
    turns = [span for span in named(finished, "chat ") if span.attributes["ace.role"] == "RRStep"]  # type: ignore[index]
    assert len(turns) == 2  # the simulator inspects the inputs, then calls FINAL
    assert all(parent_id(turn) == span_id(reflect) for turn in turns)
    assert all(turn.attributes["gen_ai.usage.input_tokens"] > 0 for turn in turns)  # type: ignore[index, operator]
