"""TagStep: count the Reflector's helpful/harmful/neutral verdicts on the skills the agent used."""

from __future__ import annotations

import logging

from ..core.context import ACEStepContext
from ..core.writable import WritableSkillbook
from ..errors import UnknownSkillError
from ._checks import require_field
from .provenance_source import REFLECTOR, sample_source

__all__ = ["TagStep"]

logger = logging.getLogger(__name__)


class TagStep:
    """Tag skills on the real skillbook from ``ctx.reflection.skill_tags``.

    Reflectors do hallucinate skill ids and tag names: such a tag is logged
    at WARNING and skipped, and the sample goes on. Each tag records where it
    came from (steps/provenance_source.py, actor ``reflector``).
    """

    requires = frozenset({"reflection"})
    provides: frozenset[str] = frozenset()
    max_workers = 1
    exclusive = True  # writes the skillbook: calls never overlap
    writes_skillbook = True

    def __init__(self, skillbook: WritableSkillbook) -> None:
        self.skillbook = skillbook

    def __call__(self, ctx: ACEStepContext) -> ACEStepContext:
        reflection = require_field(ctx.reflection, "TagStep", "reflection")
        source = sample_source(ctx, REFLECTOR)
        for skill_tag in reflection.skill_tags:
            tag = skill_tag.tag.strip().lower()
            try:
                self.skillbook.tag_skill(skill_tag.id, tag, source=source)
            except UnknownSkillError:
                logger.warning("TagStep: skill_id %r not found, skipping tag %r", skill_tag.id, skill_tag.tag)
            except ValueError as exc:  # a tag name other than helpful/harmful/neutral
                logger.warning("TagStep: skipping tag %r of skill %r: %s", skill_tag.tag, skill_tag.id, exc)
        return ctx

    def __repr__(self) -> str:
        return f"TagStep({self.skillbook!r})"
