"""Tracing an in-process pipeline run: a PipelineHook that opens the sample and step spans.

The engine runs each sample in a contextvars context of its own, carried
into its background tail (see :class:`pipeline.PipelineHook`), so the hook
keeps the sample's span in a ContextVar: the sample's steps find it in
whichever thread they run, and no other sample sees it.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from pipeline import PipelineHook

from .spans import ATTR_STEP_INDEX, record_error, sample_attributes, start_sample_span, start_step_span
from .tracing import api, get_tracer

__all__ = ["TracingHook"]


@dataclass
class _SampleSpans:
    """One sample's spans: the root, and the step span open right now (with its context token)."""

    span: Any
    tracer: Any
    steps: int = 0
    step: Any = None
    token: Any = field(default=None, repr=False)


class TracingHook(PipelineHook):
    """One trace per sample: an ``ace.sample`` span, and an ``ace.step <Step>`` span per step below it.

    Each step's span is current while the step runs, so the LLM calls it makes
    nest below it. ``attributes`` go on every sample span (the runners name
    themselves there). With no OpenTelemetry installed every method returns at once.
    """

    def __init__(self, attributes: dict[str, str | int] | None = None) -> None:
        self.attributes = dict(attributes or {})
        # Per hook, so two hooks on one pipeline never share a sample's spans.
        self._sample: ContextVar[_SampleSpans | None] = ContextVar(
            f"ace_trace_sample_{id(self)}", default=None
        )

    def __repr__(self) -> str:
        return f"TracingHook({self.attributes!r})"

    def before_sample(self, ctx: Any) -> None:
        tracer = get_tracer()
        if tracer is None:
            return
        span = start_sample_span(tracer, {**self.attributes, **sample_attributes(ctx)})
        if not span.is_recording():
            return  # no provider, or sampled out: the steps' spans would record nothing either
        self._sample.set(_SampleSpans(span, tracer))

    def before_step(self, name: str, ctx: Any) -> None:
        sample = self._sample.get()
        if sample is None:
            return
        otel = api()
        assert otel is not None
        span = start_step_span(sample.tracer, name, sample.span, {ATTR_STEP_INDEX: sample.steps})
        sample.steps += 1
        sample.step = span
        # Current while the step runs: the step's LLM calls open their spans below it.
        sample.token = otel.context.attach(otel.trace.set_span_in_context(span))

    def after_step(self, name: str, ctx: Any) -> None:
        self._end_step(None)

    def on_error(self, name: str, ctx: Any, error: BaseException) -> None:
        sample = self._sample.get()
        if sample is not None and sample.step is None:
            # Cancelled before the step started: its span shows where the sample stopped.
            self.before_step(name, ctx)
        self._end_step(error)

    def _end_step(self, error: BaseException | None) -> None:
        sample = self._sample.get()
        if sample is None or sample.step is None:
            return
        span, token = sample.step, sample.token
        sample.step = sample.token = None
        otel = api()
        assert otel is not None
        otel.context.detach(token)
        if error is not None:
            record_error(span, error)
        span.end()

    def after_sample(self, result: Any) -> None:
        sample = self._sample.get()
        if sample is None:
            return
        self._sample.set(None)
        error = getattr(result, "error", None)
        if isinstance(error, BaseException):
            sample.span.set_attribute("ace.failed_at", str(getattr(result, "failed_at", "")))
            record_error(sample.span, error)
        sample.span.end()
