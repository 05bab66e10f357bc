"""What a runnable's output says: its kind, its final text, its agent steps and messages."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ...traces.langchain.result import LangChainResult, ResultType
from .values import message_dict, plain, text_of

__all__ = ["agent_steps", "default_output_text", "make_result", "output_messages", "result_type_of"]

# Keys a chain's dict output commonly keeps its answer under, in the order tried.
ANSWER_KEYS = ("output", "answer", "result", "text", "content")


def result_type_of(output: Any) -> ResultType:
    """``agent`` for an AgentExecutor-style dict, ``langgraph`` for a state with messages, else ``simple``."""
    if isinstance(output, Mapping):
        if "intermediate_steps" in output or ("output" in output and "input" in output):
            return "agent"
        if isinstance(output.get("messages"), Sequence):
            return "langgraph"
    return "simple"


def default_output_text(output: Any) -> str:
    """The answer in an output: a string, a message's content, the last message, a known key, else JSON."""
    if isinstance(output, str):
        return output
    if isinstance(output, Mapping):
        messages = output.get("messages")
        if isinstance(messages, Sequence) and messages and not isinstance(messages, str):
            return text_of(messages[-1])
        for key in ANSWER_KEYS:
            if key in output:
                return text_of(output[key])
        return json.dumps(plain(output), ensure_ascii=False)
    return text_of(output)


def agent_steps(output: Any) -> list[dict[str, Any]]:
    """An AgentExecutor's ``intermediate_steps`` ((action, observation) pairs) as tool/input/log/output."""
    steps = output.get("intermediate_steps") if isinstance(output, Mapping) else None
    if not isinstance(steps, Sequence):
        return []
    plain_steps = []
    for step in steps:
        action, observation = step if isinstance(step, (list, tuple)) and len(step) == 2 else (step, None)
        plain_steps.append(
            {
                "tool": getattr(action, "tool", None) or "tool",
                "tool_input": plain(getattr(action, "tool_input", action)),
                "log": plain(getattr(action, "log", "")),
                "output": plain(text_of(observation) if observation is not None else ""),
            }
        )
    return plain_steps


def output_messages(output: Any) -> list[dict[str, Any]]:
    """A LangGraph state's ``messages`` as role/content dicts."""
    messages = output.get("messages") if isinstance(output, Mapping) else None
    if not isinstance(messages, Sequence) or isinstance(messages, str):
        return []
    return [message_dict(m) if hasattr(m, "content") else plain(m) for m in messages]


def make_result(
    task: str,
    output: Any,
    *,
    error: str | None = None,
    events: list[dict[str, Any]] | None = None,
    duration_seconds: float = 0.0,
    output_parser: Callable[[Any], str] | None = None,
) -> LangChainResult:
    """The result of one run from its output (or error) and recorded events.

    An output parser that fails makes a failed result naming it: the run's
    output is still kept in ``raw_result``.
    """
    text = ""
    if error is None:
        try:
            text = (output_parser or default_output_text)(output)
        except Exception as exc:  # a user's parser: its failure is this run's error, not a crash
            error = f"output_parser failed: {type(exc).__name__}: {exc}"
    return LangChainResult(
        task=task,
        output=text if isinstance(text, str) else str(text),
        result_type="error" if error is not None and output is None else result_type_of(output),
        success=error is None,
        error=error,
        intermediate_steps=agent_steps(output),
        messages=output_messages(output),
        events=events or [],
        duration_seconds=duration_seconds,
        raw_result=output,
    )
