"""Small functions the roles share to fill their prompt templates."""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import date
from typing import TYPE_CHECKING

from ..core.skill_ids import extract_cited_skill_ids

if TYPE_CHECKING:
    from ..core.outputs import AgentOutput
    from ..protocols import SkillbookLike

__all__ = [
    "MAX_TRACE_CHARS",
    "current_date",
    "extract_cited_skill_ids",
    "format_optional",
    "make_skillbook_excerpt",
    "reflection_inputs",
    "render_trace",
]

# A raw trace can be a whole browser session; the Reflector sees its head only.
MAX_TRACE_CHARS = 8_000
NONE_TEXT = "(none)"


def current_date() -> str:
    """Today's date as ``YYYY-MM-DD``, read at prompt-format time."""
    return date.today().isoformat()


def format_optional(value: object) -> str:
    """``str(value)``, or ``"(none)"`` when the value is falsy (None, "", empty list)."""
    return str(value) if value else NONE_TEXT


def make_skillbook_excerpt(skillbook: SkillbookLike, skill_ids: Iterable[str]) -> str:
    """One ``[id] content`` line per cited skill that exists; unknown ids are left out."""
    lines = []
    for skill_id in dict.fromkeys(skill_ids):
        skill = skillbook.get_skill(skill_id)
        if skill is not None:
            lines.append(f"[{skill.id}] {skill.content}")
    return "\n".join(lines)


def render_trace(trace: object, limit: int = MAX_TRACE_CHARS) -> str:
    """A prompt-ready rendering of any trace object, cut to ``limit`` characters.

    Strings pass as they are; anything JSON can hold (dicts, lists, with
    ``str`` for the rest) becomes JSON; objects JSON cannot hold fall back to
    ``repr``.
    """
    if trace is None:
        return NONE_TEXT
    if isinstance(trace, str):
        text = trace
    else:
        try:
            text = json.dumps(trace, ensure_ascii=False, default=str)
        except (TypeError, ValueError):  # e.g. a circular structure
            text = repr(trace)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n... (trace cut at {limit} of {len(text)} characters)"


def reflection_inputs(
    question: str,
    agent_output: AgentOutput,
    skillbook: SkillbookLike,
    ground_truth: str | None,
    feedback: str | None,
    trace: object | None,
    trace_chars: int = MAX_TRACE_CHARS,
) -> dict[str, str]:
    """The values of a reflector prompt's attempt sections (``REFLECTION_INPUTS``) and its date."""
    return {
        "current_date": current_date(),
        "question": format_optional(question),
        "reasoning": format_optional(agent_output.reasoning),
        "final_answer": format_optional(agent_output.final_answer),
        "ground_truth": format_optional(ground_truth),
        "feedback": format_optional(feedback),
        "skillbook_excerpt": format_optional(make_skillbook_excerpt(skillbook, agent_output.skill_ids)),
        "trace": render_trace(trace, trace_chars),
    }
