"""The skillbook as context for an external agent's input, cut to the prompt budget."""

from __future__ import annotations

from ..core.prompt_budget import DEFAULT_PROMPT_BUDGET, PromptBudget
from ..protocols import SkillbookLike
from ..roles.prompts import wrap_skillbook_for_external_agent

__all__ = ["inject_skillbook_context", "prefix_task", "strip_skillbook_context", "wrap_skillbook_context"]

# The heading wrap_skillbook_for_external_agent starts with, and what separates the context from the task.
SKILLBOOK_HEAD = "## Learned strategies\n"
TASK_HEAD = "\n## Task\n"


def wrap_skillbook_context(
    skillbook: SkillbookLike, task: str = "", *, budget: PromptBudget | None = DEFAULT_PROMPT_BUDGET
) -> str:
    """The learned strategies and how to use them, for another agent's prompt; "" for an empty skillbook.

    Above ``budget`` (None: no limit) only the skills most relevant to ``task``
    are shown, exactly as in the ACE Agent's own prompt.
    """
    return wrap_skillbook_for_external_agent(skillbook, budget=budget, query=task)


def inject_skillbook_context(
    task: str, skillbook: SkillbookLike, *, budget: PromptBudget | None = DEFAULT_PROMPT_BUDGET
) -> str:
    """``task`` with the skillbook context before it; ``task`` unchanged when the skillbook is empty."""
    return prefix_task(task, wrap_skillbook_context(skillbook, task, budget=budget))


def prefix_task(task: str, context: str) -> str:
    """``task`` with ``context`` (a wrapped skillbook) before it; ``task`` itself when context is empty."""
    return f"{context}{TASK_HEAD}{task}" if context else task


def strip_skillbook_context(task: str) -> str:
    """``task`` without the skillbook context :func:`inject_skillbook_context` put before it."""
    if task.startswith(SKILLBOOK_HEAD) and TASK_HEAD in task:
        return task.split(TASK_HEAD, 1)[1]
    return task
