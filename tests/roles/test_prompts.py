"""Prompt templates: placeholders, stable section headings, the external-agent wrapper."""

from __future__ import annotations

import re
import string

import pytest

from ace_workers.core import Skillbook, SkillbookView
from ace_workers.roles import (
    AGENT_PROMPT,
    REFLECTOR_PROMPT,
    SKILL_MANAGER_PROMPT,
    SKILL_MANAGER_TOOLS_PROMPT,
    SKILLBOOK_USAGE_INSTRUCTIONS,
    wrap_skillbook_for_external_agent,
)

TEMPLATES = {
    "agent": (
        AGENT_PROMPT,
        {"current_date", "skillbook", "reflection", "question", "context"},
        ["Skillbook", "Skillbook usage", "Reflection", "Question", "Context", "Output"],
    ),
    "reflector": (
        REFLECTOR_PROMPT,
        {
            "current_date",
            "question",
            "reasoning",
            "final_answer",
            "ground_truth",
            "feedback",
            "skillbook_excerpt",
            "trace",
        },
        [
            "Question",
            "Agent reasoning",
            "Agent answer",
            "Ground truth",
            "Feedback",
            "Cited skills",
            "Trace",
            "Instructions",
            "Output",
        ],
    ),
    "skill_manager": (
        SKILL_MANAGER_PROMPT,
        {"current_date", "progress", "question_context", "stats", "skillbook", "lookup", "reflection"},
        [
            "Progress",
            "Question context",
            "Skillbook stats",
            "Skillbook",
            "Reflection",
            "Instructions",
            "Output",
        ],
    ),
    "skill_manager_tools": (
        SKILL_MANAGER_TOOLS_PROMPT,
        {
            "current_date",
            "progress",
            "question_context",
            "stats",
            "skillbook",
            "lookup",
            "reflection",
            "max_k",
            "calls_left",
            "tool_results",
        },
        [
            "Progress",
            "Question context",
            "Skillbook stats",
            "Skillbook",
            "Reflection",
            "Tools",
            "Tool results",
            "Instructions",
            "Output",
        ],
    ),
}


@pytest.mark.parametrize("name", TEMPLATES)
def test_template_placeholders_are_exactly_the_documented_ones(name: str) -> None:
    template, expected, _ = TEMPLATES[name]
    fields = {f for _, f, _, _ in string.Formatter().parse(template) if f is not None}
    assert fields == expected


@pytest.mark.parametrize("name", TEMPLATES)
def test_template_sections_come_in_a_stable_order(name: str) -> None:
    template, placeholders, headings = TEMPLATES[name]
    filled = template.format(**{p: "x" for p in placeholders})
    assert re.findall(r"^## (.+)$", filled, re.MULTILINE) == headings
    assert "{" in filled  # the JSON output hints survive formatting as literal braces


def test_usage_instructions_hold_no_format_braces() -> None:
    assert "{" not in SKILLBOOK_USAGE_INSTRUCTIONS
    assert "}" not in SKILLBOOK_USAGE_INSTRUCTIONS
    assert SKILLBOOK_USAGE_INSTRUCTIONS in AGENT_PROMPT


def test_wrap_skillbook_for_external_agent_is_empty_for_an_empty_skillbook() -> None:
    assert wrap_skillbook_for_external_agent(Skillbook()) == ""


def test_wrap_skillbook_for_external_agent_holds_table_and_instructions(skillbook: Skillbook) -> None:
    for book in (skillbook, SkillbookView(skillbook)):
        text = wrap_skillbook_for_external_agent(book)
        assert skillbook.as_prompt() in text
        assert SKILLBOOK_USAGE_INSTRUCTIONS in text
