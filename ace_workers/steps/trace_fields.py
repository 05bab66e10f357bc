"""Reading a dict trace: the Reflector's typed fields under their common names, and everything else.

Traces come from many producers (EvaluateStep, integrations, recorded logs) that
name the same things differently: the spec's own example passes ``task`` and
``output``. Each typed field takes the first of its names that the trace holds;
every other non-empty field (a second alias included) goes to the Reflector's
Trace section, so nothing a producer recorded is dropped.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["TRACE_ALIASES", "TraceFields", "read_trace"]

# Typed field -> the trace keys that fill it, most specific first.
TRACE_ALIASES: dict[str, tuple[str, ...]] = {
    "question": ("question", "task", "input", "prompt", "query", "instruction"),
    "answer": ("answer", "final_answer", "output", "response", "result", "prediction"),
    "reasoning": ("reasoning", "thoughts", "thinking", "rationale"),
    "feedback": ("feedback", "evaluation", "critique"),
    "ground_truth": ("ground_truth", "expected", "expected_output", "expected_answer", "reference_answer"),
    "skill_ids": ("skill_ids", "cited_skill_ids"),
}


@dataclass(frozen=True)
class TraceFields:
    """What the Reflector's arguments take from one trace, and the fields left for its Trace section."""

    question: str = ""
    answer: str = ""
    reasoning: str = ""
    feedback: str | None = None
    ground_truth: str | None = None
    skill_ids: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)


def read_trace(trace: Mapping[str, Any]) -> TraceFields:
    """Map ``trace`` onto the Reflector's fields by :data:`TRACE_ALIASES`; keep the rest in ``extra``."""
    taken: dict[str, Any] = {}
    used: set[str] = set()
    for name, aliases in TRACE_ALIASES.items():
        key = next((alias for alias in aliases if _holds(trace.get(alias))), None)
        if key is not None:
            taken[name] = trace[key]
            used.add(key)
    extra = {str(key): value for key, value in trace.items() if key not in used and _holds(value)}
    return TraceFields(
        question=_text(taken.get("question")) or "",
        answer=_text(taken.get("answer")) or "",
        reasoning=_text(taken.get("reasoning")) or "",
        feedback=_text(taken.get("feedback")),
        ground_truth=_text(taken.get("ground_truth")),
        skill_ids=_ids(taken.get("skill_ids")),
        extra=extra,
    )


def _holds(value: Any) -> bool:
    """False for what says nothing: None, an empty string or an empty collection."""
    return value is not None and value != "" and value != [] and value != {}


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):  # e.g. a circular structure
        return repr(value)


def _ids(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple, set, frozenset)):
        return [str(item) for item in value]
    return [str(value)]
