"""LangChainToTrace: a LangChain run as the Reflector's trace dict."""

from __future__ import annotations

from typing import Any

from ...core.context import ACEStepContext
from ...steps._checks import require_field
from ..session_trace import SessionRecorder
from ..trace_text import TraceConverter
from .result import LangChainResult

__all__ = ["LangChainToTrace", "langchain_result_to_trace"]


class LangChainToTrace(TraceConverter):
    """Rewrite ``trace`` (a :class:`LangChainResult`) as the standard trace dict the learning tail reads.

    The trace holds the task as ``question``; the model replies, tool calls
    and results and retrievals in order as ``reasoning`` (each cut to
    ``max_step_chars`` with a note); the final ``answer``; the ``errors``; and
    a ``feedback`` line on the outcome. A run whose callbacks recorded no tool
    call but whose output holds an agent's ``intermediate_steps`` gets those
    steps instead.
    """

    def __call__(self, ctx: ACEStepContext) -> ACEStepContext:
        result = require_field(ctx.trace, "LangChainToTrace", "trace")
        if not isinstance(result, LangChainResult):
            raise TypeError(
                f"LangChainToTrace needs ctx.trace to be a LangChainResult, got {type(result).__name__}"
            )
        return ctx.replace(trace=langchain_result_to_trace(result, **self.limits))


def langchain_result_to_trace(result: LangChainResult, **limits: int) -> dict[str, Any]:
    """The trace dict of one run; a run that raised before doing anything still gives its error."""
    recorder = SessionRecorder(f"LangChain run of {result.task[:60]!r}", **limits)
    recorder.user_text(result.task or "(no task text)")
    for event in result.events:
        _record_event(recorder, event)
    if recorder.tool_calls == 0:
        for step in result.intermediate_steps:
            _record_agent_step(recorder, step)
    recorder.run_error(result.error)
    outcome = "finished" if result.success else f"failed: {result.error}"
    return recorder.to_trace(
        answer=result.output,
        feedback=f"The LangChain runnable {outcome}",
        success=result.success,
        result_type=result.result_type,
        duration_seconds=round(result.duration_seconds, 3),
    )


def _record_event(recorder: SessionRecorder, event: dict[str, Any]) -> None:
    kind = event.get("type")
    if kind == "llm":
        recorder.model = recorder.model or event.get("model")
        recorder.assistant_text(str(event.get("text") or ""))
    elif kind == "tool_call":
        recorder.tool_call(str(event.get("name") or "tool"), event.get("input"))
    elif kind == "tool_result":
        recorder.tool_result(str(event.get("output") or ""), name=str(event.get("name") or "tool"))
    elif kind == "tool_error":
        recorder.tool_result(
            str(event.get("error") or ""), is_error=True, name=str(event.get("name") or "tool")
        )
    elif kind == "retrieval":
        documents = event.get("documents") or []
        recorder.tool_result(
            "\n---\n".join(map(str, documents)), name=f"retriever ({len(documents)} documents)"
        )
    elif kind == "error":
        recorder.error(f"{event.get('where', 'run')} failed: {event.get('error')}")
    else:
        recorder.skip(f"event {kind}")


def _record_agent_step(recorder: SessionRecorder, step: dict[str, Any]) -> None:
    if step.get("log"):
        recorder.thinking(str(step["log"]))
    name = str(step.get("tool") or "tool")
    recorder.tool_call(name, step.get("tool_input"))
    recorder.tool_result(str(step.get("output") or ""), name=name)
