"""What the integration tests share: the zorb rule, a skillbook holding it, and a step's context."""

from __future__ import annotations

from ace_workers.core import ACEStepContext, Skillbook
from ace_workers.core.context import SkillbookView

ZORB_RULE = "For zorb questions, reverse the digits of the input."


def skillbook_with_rule() -> Skillbook:
    book = Skillbook()
    book.add_skill("zorb", ZORB_RULE)
    return book


def context(task: str, skillbook: Skillbook) -> ACEStepContext:
    return ACEStepContext(sample=task, skillbook=SkillbookView(skillbook))
