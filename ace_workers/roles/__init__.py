"""The three ACE roles (Agent, Reflector, SkillManager), their prompts and helpers."""

from .agent import Agent
from .helpers import (
    MAX_TRACE_CHARS,
    extract_cited_skill_ids,
    format_optional,
    make_skillbook_excerpt,
    render_trace,
)
from .prompts import (
    AGENT_PROMPT,
    REFLECTOR_PROMPT,
    SKILL_MANAGER_PROMPT,
    SKILL_MANAGER_TOOLS_PROMPT,
    SKILLBOOK_USAGE_INSTRUCTIONS,
    wrap_skillbook_for_external_agent,
)
from .reflector import Reflector
from .skill_manager import SkillManager

__all__ = [
    # roles
    "Agent",
    "Reflector",
    "SkillManager",
    # prompt templates
    "AGENT_PROMPT",
    "REFLECTOR_PROMPT",
    "SKILL_MANAGER_PROMPT",
    "SKILL_MANAGER_TOOLS_PROMPT",
    "SKILLBOOK_USAGE_INSTRUCTIONS",
    "wrap_skillbook_for_external_agent",
    # helpers
    "extract_cited_skill_ids",
    "format_optional",
    "make_skillbook_excerpt",
    "render_trace",
    "MAX_TRACE_CHARS",
]
