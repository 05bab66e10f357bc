"""What the tracing tests share: an in-memory span exporter on a provider of the test's own."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ace_workers.observability.tracing import use_tracer_provider


@contextmanager
def memory_spans() -> Iterator[InMemorySpanExporter]:
    """Every span ace-workers makes meanwhile, exported synchronously to memory.

    The provider is installed with use_tracer_provider, not as OpenTelemetry's
    global provider (which can be set only once per process), and removed after.
    """
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    use_tracer_provider(provider)
    try:
        yield exporter
    finally:
        use_tracer_provider(None)
        provider.shutdown()


def named(spans: Sequence[ReadableSpan], prefix: str) -> list[ReadableSpan]:
    """The spans whose name starts with ``prefix``."""
    return [span for span in spans if span.name.startswith(prefix)]


def parent_id(span: ReadableSpan) -> int | None:
    """The span id of ``span``'s parent, None for a root."""
    return span.parent.span_id if span.parent is not None else None


def span_id(span: ReadableSpan) -> int:
    """``span``'s own span id."""
    context: Any = span.get_span_context()
    return int(context.span_id)


def trace_id(span: ReadableSpan) -> int:
    """The id of ``span``'s trace."""
    context: Any = span.get_span_context()
    return int(context.trace_id)


def by_trace(spans: Sequence[ReadableSpan]) -> dict[int, list[ReadableSpan]]:
    """The spans grouped by the id of their trace."""
    traces: dict[int, list[ReadableSpan]] = defaultdict(list)
    for span in spans:
        traces[trace_id(span)].append(span)
    return traces
