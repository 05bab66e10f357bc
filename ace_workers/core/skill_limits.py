"""How long a skill's content, section and id may be, checked at every way a skill comes in.

A skill is a short strategy shown in every prompt; without a limit one 200,000-character
skill (an LLM's runaway ADD, a crafted file) would fill every prompt and slow every reader.
The limits are documented in docs/skillbook.md; a skill stored before them stays readable.
"""

from __future__ import annotations

__all__ = ["MAX_CONTENT_CHARS", "MAX_SECTION_CHARS", "MAX_SKILL_ID_CHARS", "skill_limit_problem"]

MAX_CONTENT_CHARS = 4_000  # as a trace step's text (traces/trace_text.py); strategies run to a few hundred
MAX_SECTION_CHARS = 200
MAX_SKILL_ID_CHARS = 256  # a section's first word, a dash and the number


def skill_limit_problem(*, content: str = "", section: str = "", skill_id: str = "") -> str | None:
    """Why a skill with these fields is too long to write, or None."""
    for name, value, limit in (
        ("content", content, MAX_CONTENT_CHARS),
        ("section", section, MAX_SECTION_CHARS),
        ("id", skill_id, MAX_SKILL_ID_CHARS),
    ):
        if len(value) > limit:
            return f"its {name} has {len(value)} characters, over the {limit} a skill's {name} may have"
    return None
