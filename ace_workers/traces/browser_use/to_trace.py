"""BrowserToTrace: a browser-use run (or a recorded ``AgentHistoryList``) as the Reflector's trace dict."""

from __future__ import annotations

from typing import Any

from ...core.context import ACEStepContext
from ...errors import EmptySessionError
from ...steps._checks import require_field
from ..session_trace import SessionRecorder
from ..trace_text import DEFAULT_MAX_STEP_CHARS, DEFAULT_MAX_TRACE_CHARS, TraceConverter
from .history import (
    history_steps,
    is_agent_history,
    is_saved_history,
    recorded_task,
    run_outcome,
    steps_cited_skill_ids,
)
from .result import BrowserResult

__all__ = ["BrowserToTrace", "browser_history_to_trace", "browser_result_to_trace"]

# The names of the model's words in a step, as the trace shows them.
BRAIN_LABELS = {"evaluation": "evaluation of the previous goal", "memory": "memory", "next_goal": "next goal"}
SOURCE = "browser-use run"


class BrowserToTrace(TraceConverter):
    """Rewrite ``trace`` as the standard trace dict the learning tail reads.

    Takes a :class:`BrowserResult` (from
    :class:`~ace_workers.integrations.browser_use.BrowserExecuteStep`), a
    recorded browser-use ``AgentHistoryList``, or the JSON one saves (the
    ``browser_use_traces`` recipe's input). The trace holds the task as
    ``question``, every step in order as ``reasoning`` (the page it started
    on, the model's thinking, evaluation, memory and next goal, each action
    with its parameters and what it returned, long extracted content cut to
    ``max_step_chars`` with a note), the ``done`` text as ``answer``, the
    ``errors``, a ``feedback`` line on the outcome and the ``skill_ids`` the
    model cited.

    Raises:
        EmptySessionError: a recorded history holds no step.
    """

    def __call__(self, ctx: ACEStepContext) -> ACEStepContext:
        trace = require_field(ctx.trace, "BrowserToTrace", "trace")
        if isinstance(trace, BrowserResult):
            converted = browser_result_to_trace(trace, **self.limits)
            return ctx.replace(trace=converted)
        if is_agent_history(trace) or is_saved_history(trace):
            converted = browser_history_to_trace(trace, **self.limits)
            return ctx.replace(trace=converted)
        raise TypeError(
            "BrowserToTrace needs ctx.trace to be a BrowserResult, a browser-use AgentHistoryList or its "
            "saved JSON (an object with a 'history' list), "
            f"got {type(trace).__name__}"
        )


def browser_history_to_trace(
    history: Any,
    task: str | None = None,
    *,
    source: str = SOURCE,
    max_step_chars: int = DEFAULT_MAX_STEP_CHARS,
    max_trace_chars: int = DEFAULT_MAX_TRACE_CHARS,
) -> dict[str, Any]:
    """The trace dict of a recorded run: an ``AgentHistoryList`` (or its saved dict form).

    ``task`` defaults to the one the run recorded in its state messages;
    ``source`` names the run in errors (a file, say).

    Raises:
        EmptySessionError: the history holds no step.
        TypeError: ``history`` is not a browser-use history.
    """
    steps = history_steps(history)
    if not steps:
        raise EmptySessionError(source, 0, 0)
    success, output, error = run_outcome(steps)
    task = task if task is not None else recorded_task(history) or ""
    return _to_trace(
        task,
        steps,
        success=success,
        output=output,
        error=error,
        max_step_chars=max_step_chars,
        max_trace_chars=max_trace_chars,
    )


def browser_result_to_trace(
    result: BrowserResult,
    *,
    max_step_chars: int = DEFAULT_MAX_STEP_CHARS,
    max_trace_chars: int = DEFAULT_MAX_TRACE_CHARS,
) -> dict[str, Any]:
    """The trace dict of one run; a run that raised before its first step still gives one, with its error."""
    return _to_trace(
        result.task,
        result.chronological_steps,
        success=result.success,
        output=result.output,
        error=result.error,
        cited=result.cited_skill_ids,
        duration_seconds=round(result.duration_seconds, 3) or None,
        max_step_chars=max_step_chars,
        max_trace_chars=max_trace_chars,
    )


def _to_trace(
    task: str,
    steps: list[dict[str, Any]],
    *,
    success: bool,
    output: str,
    error: str | None,
    cited: list[str] | None = None,
    max_step_chars: int = DEFAULT_MAX_STEP_CHARS,
    max_trace_chars: int = DEFAULT_MAX_TRACE_CHARS,
    **extra: Any,
) -> dict[str, Any]:
    recorder = SessionRecorder(
        f"{SOURCE} of {task[:60]!r}", max_step_chars=max_step_chars, max_trace_chars=max_trace_chars
    )
    recorder.user_text(task)
    for step in steps:
        _record_step(recorder, step)
    recorder.run_error(error)
    outcome = "The browser-use agent finished the task"
    if not success:
        outcome = f"The browser-use run failed: {error or 'no reason given'}"
    return recorder.to_trace(
        answer=output,
        feedback=outcome,
        success=success,
        steps=len(steps),
        skill_ids=cited if cited is not None else steps_cited_skill_ids(steps),
        **extra,
    )


def _record_step(recorder: SessionRecorder, step: dict[str, Any]) -> None:
    number = step.get("step", len(recorder.steps) + 1)
    page = f" on {step['url']}" if step.get("url") else ""
    if step.get("thinking"):
        recorder.thinking(f"step {number}: {step['thinking']}")
    brain = "; ".join(f"{label}: {step[name]}" for name, label in BRAIN_LABELS.items() if step.get(name))
    recorder.assistant_text(f"step {number}{page}" + (f": {brain}" if brain else ""))
    actions = step.get("actions") or []
    for action in actions:
        recorder.tool_call(action["name"], action["params"])
    for index, result in enumerate(step.get("results") or []):
        name = actions[index]["name"] if index < len(actions) else "agent"
        if result.get("error"):
            recorder.tool_result(result["error"], is_error=True, name=name)
        else:
            text = result.get("extracted_content") or result.get("long_term_memory") or "(no output)"
            recorder.tool_result(text, name=name)
