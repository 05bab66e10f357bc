"""The spans of one sample: ``ace.sample``, ``ace.step <Step>`` below it, ``chat <model>`` below a step.

Every function is a no-op (and every context manager yields an empty carrier)
without OpenTelemetry; :mod:`.tracing` says where the spans go.

A sample is one trace. Its root ``ace.sample`` span starts a new trace (a
run inside the caller's own span links to it rather than joining it, so one
batch of thousands of samples is not one giant trace); each step's span is a
child of the sample span, and each LLM call's span a child of the step
running it. LLM spans follow OpenTelemetry's GenAI semantic conventions.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from .tracing import api, extract_context, get_tracer, inject_carrier

__all__ = [
    # span names
    "SAMPLE_SPAN",
    "STEP_SPAN",
    # attribute keys
    "ATTR_BATCH_ID",
    "ATTR_EPOCH",
    "ATTR_LLM_COST",
    "ATTR_RECIPE",
    "ATTR_RUNNER",
    "ATTR_SAMPLE_ID",
    "ATTR_SAMPLE_INDEX",
    "ATTR_SERVED_LABEL",
    "ATTR_SERVED_VERSION",
    "ATTR_SKILLBOOK",
    "ATTR_STEP_INDEX",
    "ATTR_STEP_NAME",
    # spans
    "LLMCall",
    "client_model",
    "record_error",
    "sample_attributes",
    "set_span_attributes",
    "start_sample_span",
    "start_step_span",
    "traced_llm_call",
    "traced_sample",
    "traced_step",
]

SAMPLE_SPAN = "ace.sample"
STEP_SPAN = "ace.step"  # a step's span is "ace.step <StepClass>"

ATTR_SKILLBOOK = "ace.skillbook"
ATTR_RECIPE = "ace.recipe"
ATTR_RUNNER = "ace.runner"
ATTR_BATCH_ID = "ace.batch_id"
ATTR_EPOCH = "ace.epoch"
ATTR_SAMPLE_INDEX = "ace.sample.index"
ATTR_SAMPLE_ID = "ace.sample.id"
ATTR_STEP_NAME = "ace.step.name"
ATTR_STEP_INDEX = "ace.step.index"
ATTR_LLM_COST = "ace.llm.cost_usd"
# The skillbook version and label ("head" for the head) that served the agent (serving.py).
ATTR_SERVED_VERSION = "ace.served.version"
ATTR_SERVED_LABEL = "ace.served.label"

# OpenTelemetry GenAI semantic conventions (gen_ai.system is the older name of provider.name).
_GEN_AI_OPERATION = "gen_ai.operation.name"
_GEN_AI_SYSTEM = "gen_ai.system"
_GEN_AI_PROVIDER = "gen_ai.provider.name"
_GEN_AI_REQUEST_MODEL = "gen_ai.request.model"
_GEN_AI_RESPONSE_MODEL = "gen_ai.response.model"
_GEN_AI_INPUT_TOKENS = "gen_ai.usage.input_tokens"
_GEN_AI_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
_ERROR_TYPE = "error.type"

Attributes = Mapping[str, str | int | float | bool]


def sample_attributes(ctx: Any) -> dict[str, str | int]:
    """The sample attributes a step context knows: epoch, index in the epoch, sample id."""
    attributes: dict[str, str | int] = {}
    for key, field in ((ATTR_EPOCH, "epoch"), (ATTR_SAMPLE_INDEX, "step_index")):
        value = getattr(ctx, field, None)
        if isinstance(value, int) and not isinstance(value, bool):
            attributes[key] = value
    sample = getattr(ctx, "sample", None)
    sample_id = sample.get("id") if isinstance(sample, Mapping) else getattr(sample, "id", None)
    if isinstance(sample_id, (str, int)) and not isinstance(sample_id, bool):
        attributes[ATTR_SAMPLE_ID] = sample_id
    return attributes


def set_span_attributes(attributes: Attributes) -> None:
    """Add ``attributes`` to the current span (none without OpenTelemetry or outside a span)."""
    otel = api()
    if otel is not None:
        otel.trace.get_current_span().set_attributes(dict(attributes))


def start_sample_span(tracer: Any, attributes: Attributes, *, kind: str = "INTERNAL") -> Any:
    """Start a sample's root span in a new trace, linked to the caller's current span if there is one."""
    otel = api()
    assert otel is not None
    current = otel.trace.get_current_span().get_span_context()
    links = [otel.trace.Link(current)] if current.is_valid else []
    return tracer.start_span(
        SAMPLE_SPAN,
        context=otel.context.Context(),  # empty: a root, whatever is current
        kind=otel.trace.SpanKind[kind],
        attributes=attributes,
        links=links,
    )


def start_step_span(
    tracer: Any, name: str, parent: Any, attributes: Attributes, *, kind: str = "INTERNAL"
) -> Any:
    """Start step ``name``'s span as a child of ``parent`` (a span, or a context from a carrier)."""
    otel = api()
    assert otel is not None
    context = otel.trace.set_span_in_context(parent) if _is_span(parent) else parent
    return tracer.start_span(
        f"{STEP_SPAN} {name}",
        context=context,
        kind=otel.trace.SpanKind[kind],
        attributes={ATTR_STEP_NAME: name, **attributes},
    )


def _is_span(value: Any) -> bool:
    return hasattr(value, "get_span_context")


def record_error(span: Any, error: BaseException) -> None:
    """Mark ``span`` failed by ``error``: the exception event, ``error.type`` and an ERROR status."""
    otel = api()
    if otel is None:
        return
    span.record_exception(error)
    span.set_attribute(_ERROR_TYPE, type(error).__qualname__)
    span.set_status(otel.trace.Status(otel.trace.StatusCode.ERROR, f"{type(error).__name__}: {error}"))


@contextmanager
def traced_sample(attributes: Attributes) -> Iterator[dict[str, str]]:
    """A sample's root span around sending it; yields its carrier for the sample's messages ({} if off)."""
    tracer = get_tracer()
    if tracer is None:
        yield {}
        return
    span = start_sample_span(tracer, attributes, kind="PRODUCER")
    try:
        yield inject_carrier(api().trace.set_span_in_context(span))  # type: ignore[union-attr]
    except BaseException as error:
        record_error(span, error)
        raise
    finally:
        span.end()


@contextmanager
def traced_step(
    name: str,
    carrier: Mapping[str, Any] | None,
    attributes: Attributes,
    *,
    expected: tuple[type[BaseException], ...] = (),
) -> Iterator[dict[str, str]]:
    """Step ``name``'s span, current while the step runs, a child of the sample ``carrier`` names.

    Without a valid carrier (a sample sent by a process that does not trace)
    the sample's trace starts here: a sample span is made, and the yielded
    carrier is its own, to pass on to the sample's next steps. Otherwise the
    yielded carrier is ``carrier`` itself. An exception of ``expected`` types
    ends the span without marking it failed.
    """
    tracer = get_tracer()
    if tracer is None:
        yield dict(carrier or {})
        return
    otel = api()
    assert otel is not None
    parent = extract_context(carrier)
    if parent is None:
        sample = start_sample_span(tracer, _sample_part(attributes), kind="CONSUMER")
        sample.end()  # a mark where the trace starts; the steps carry the time
        parent = otel.trace.set_span_in_context(sample)
        passed_on = inject_carrier(parent)
    else:
        passed_on = {key: value for key, value in (carrier or {}).items() if isinstance(value, str)}
    span = start_step_span(tracer, name, parent, attributes, kind="CONSUMER")
    with otel.trace.use_span(span, end_on_exit=True, record_exception=False, set_status_on_exception=False):
        try:
            yield passed_on
        except expected:
            raise
        except BaseException as error:
            record_error(span, error)
            raise


def _sample_part(attributes: Attributes) -> dict[str, str | int | float | bool]:
    """The attributes that describe the sample rather than the step."""
    return {key: value for key, value in attributes.items() if not key.startswith("ace.step.")}


class LLMCall:
    """The open span of one LLM call; :meth:`record` notes what the call returned."""

    def __init__(self, span: Any) -> None:
        self.span = span

    def record(self, output: Any) -> None:
        """Usage, cost and answering model from a role output's ``raw`` (what clients fill in)."""
        raw = getattr(output, "raw", None)
        if self.span is None or not isinstance(raw, Mapping):
            return
        model = raw.get("model")
        if isinstance(model, str):
            self.span.set_attribute(_GEN_AI_RESPONSE_MODEL, model)
        self.record_usage(raw.get("usage"))
        cost = raw.get("cost")
        if isinstance(cost, (int, float)) and not isinstance(cost, bool):
            self.span.set_attribute(ATTR_LLM_COST, float(cost))
        attempts = raw.get("attempts")
        if isinstance(attempts, int):
            self.span.set_attribute("ace.llm.attempts", attempts)

    def record_usage(self, usage: Any) -> None:
        """Token counts from a usage dict (``prompt_tokens``, ``completion_tokens``)."""
        if self.span is None or not isinstance(usage, Mapping):
            return
        for key, attribute in (
            ("prompt_tokens", _GEN_AI_INPUT_TOKENS),
            ("completion_tokens", _GEN_AI_OUTPUT_TOKENS),
        ):
            value = usage.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                self.span.set_attribute(attribute, value)


def client_model(llm: Any) -> str:
    """The model a client asks for: its ``model``, or the one of the client it wraps."""
    for client in (llm, getattr(llm, "llm", None)):
        model = getattr(client, "model", None)
        if isinstance(model, str) and model:
            return model
    return type(llm).__name__


def _provider(llm: Any, model: str) -> str:
    """The GenAI provider: the client's ``provider_name``, else a litellm model string's prefix."""
    for client in (llm, getattr(llm, "llm", None)):
        name = getattr(client, "provider_name", None)
        if isinstance(name, str) and name:
            return name
    prefix, slash, _ = model.partition("/")
    return prefix if slash else "litellm"


@contextmanager
def traced_llm_call(llm: Any, *, response_model: str, role: str) -> Iterator[LLMCall]:
    """A ``chat <model>`` span around one structured LLM call, current while it runs.

    A failed call marks the span failed; the token usage a RetriesExhausted
    carries is recorded all the same (those tokens were paid for).
    """
    tracer = get_tracer()
    if tracer is None:
        yield LLMCall(None)
        return
    otel = api()
    assert otel is not None
    model = client_model(llm)
    provider = _provider(llm, model)
    span = tracer.start_span(
        f"chat {model}",
        kind=otel.trace.SpanKind.CLIENT,
        attributes={
            _GEN_AI_OPERATION: "chat",
            _GEN_AI_SYSTEM: provider,
            _GEN_AI_PROVIDER: provider,
            _GEN_AI_REQUEST_MODEL: model,
            "ace.llm.response_model": response_model,
            "ace.role": role,
        },
    )
    call = LLMCall(span)
    with otel.trace.use_span(span, end_on_exit=True, record_exception=False, set_status_on_exception=False):
        try:
            yield call
        except BaseException as error:
            call.record_usage(getattr(error, "usage", None))
            record_error(span, error)
            raise
