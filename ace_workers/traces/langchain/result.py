"""LangChainResult: what one run of a LangChain runnable did, as the execute step records it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["LangChainResult", "ResultType"]

# simple: a chain or model; agent: an AgentExecutor-style dict with "output" and
# "intermediate_steps"; langgraph: a graph state with "messages"; error: the run raised.
ResultType = Literal["simple", "agent", "langgraph", "error"]


@dataclass
class LangChainResult:
    """One run of a runnable on an input.

    ``events`` are the run's recorded callbacks in order, as plain dicts (model
    replies, tool calls and results, retrievals, errors); ``intermediate_steps``
    and ``messages`` are taken from the output when it holds them. All of these
    are JSON values, so a result can travel to the workers; ``raw_result`` is the
    runnable's own output and stays in this process.
    """

    task: str
    output: str
    result_type: ResultType
    success: bool
    error: str | None = None
    intermediate_steps: list[dict[str, Any]] = field(default_factory=list)
    messages: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    duration_seconds: float = 0.0
    raw_result: Any = field(default=None, repr=False, compare=False)
