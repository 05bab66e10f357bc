"""Prompt templates of the three ACE roles, and the skillbook wrapper for external agents.

Templates are ``str.format`` strings: literal braces are doubled, and every
placeholder is filled by the role at call time (``{current_date}`` included,
so a long-running worker never sends a stale date).

Each prompt is a list of sections under stable ``## Heading`` lines. Keep the
headings stable: the simulated LLM in :mod:`ace_workers.sim` finds its inputs
by them, and so does anyone reading a logged prompt.

Placeholders per template:

- ``AGENT_PROMPT``: current_date, skillbook, reflection, question, context
- ``REFLECTOR_PROMPT``: current_date, question, reasoning, final_answer,
  ground_truth, feedback, skillbook_excerpt, trace
- ``SKILL_MANAGER_PROMPT``: current_date, progress, question_context, stats,
  skillbook, lookup, reflection
- ``SKILL_MANAGER_TOOLS_PROMPT``: the same, and max_k, calls_left, tool_results
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..core.prompt_budget import PromptBudget
    from ..protocols import SkillbookLike

__all__ = [
    "AGENT_PROMPT",
    "REFLECTOR_PROMPT",
    "REFLECTION_INPUTS",
    "SKILL_MANAGER_PROMPT",
    "SKILL_MANAGER_TOOLS_PROMPT",
    "SKILLBOOK_USAGE_INSTRUCTIONS",
    "wrap_skillbook_for_external_agent",
]

# No braces in here: it is pasted into a format template as literal text.
SKILLBOOK_USAGE_INSTRUCTIONS = """\
- The skillbook lists strategies learned from earlier tasks, with helpful/harmful/neutral votes.
- Apply a skill only where it fits the task; ignore the rest.
- Cite every skill you apply by its id in square brackets, e.g. "per [general-00001], ...".
- Prefer skills with more helpful than harmful votes; they are lessons, not laws."""

AGENT_PROMPT = (
    """\
# Agent
Date: {current_date}. Answer the question. Use the skillbook; Reflection is feedback on a \
previous attempt at this question, if any.

## Skillbook
{skillbook}

## Skillbook usage
"""
    + SKILLBOOK_USAGE_INSTRUCTIONS
    + """

## Reflection
{reflection}

## Question
{question}

## Context
{context}

## Output
JSON {{"reasoning": str, "final_answer": str}}
- reasoning: short steps; cite each skill applied as [skill-id].
- final_answer: the answer only, no explanation.
"""
)

# The attempt a reflection is about: the same sections in every reflector's prompt.
REFLECTION_INPUTS = """
## Question
{question}

## Agent reasoning
{reasoning}

## Agent answer
{final_answer}

## Ground truth
{ground_truth}

## Feedback
{feedback}

## Cited skills
{skillbook_excerpt}

## Trace
{trace}
"""

REFLECTOR_PROMPT = (
    """\
# Reflector
Date: {current_date}. Diagnose one attempt by an agent and extract lessons that transfer to \
similar tasks.
"""
    + REFLECTION_INPUTS
    + """
## Instructions
1. Decide if the answer is right: ground truth or feedback decide; with neither, judge the \
reasoning (or the trace).
2. If wrong: what went wrong, its root cause, the correct approach.
3. key_insight: the single most reusable lesson. extracted_learnings: atomic imperative \
sentences stating the general rule, not this instance's values.
4. skill_tags: tag each cited skill helpful, harmful or neutral by its effect on this outcome; \
use only ids listed under Cited skills.

## Output
JSON {{"reasoning", "error_identification", "root_cause_analysis", "correct_approach", \
"key_insight", "extracted_learnings": [{{"learning", "atomicity_score", "evidence"}}], \
"skill_tags": [{{"id", "tag"}}]}}
"""
)

# The SkillManager's inputs, in every form of its prompt. ``{lookup}`` is empty, or the
# lookup's sections (roles/lookup_section.py) with a blank line before each heading.
_SKILL_MANAGER_INPUTS = """
## Progress
{progress}

## Question context
{question_context}

## Skillbook stats
{stats}

## Skillbook
{skillbook}
{lookup}
## Reflection
{reflection}
"""

_SKILL_MANAGER_RULES = """
## Instructions
- ADD a skill only for a learning no existing skill states: one imperative, general idea, \
under a short section named for the task type.
- UPDATE a skill the learning refines; REMOVE one that is wrong or repeatedly harmful.
- A learning that contradicts a skill: while the skill's harmful votes do not exceed its \
helpful ones, TAG it with metadata {{"harmful": 1}} (one vote against it) and leave its text; \
once they do, REMOVE it and ADD the learning.
- The cited skills' helpful/harmful tags are recorded separately. TAG only an existing skill \
that this learning restates, with metadata {{"helpful": 1}}, instead of adding a duplicate.
- Use only ids present in the skillbook; never add a duplicate. No operations is a valid answer.
"""

_UPDATE_FORMAT = """{{"update": {{"reasoning": str, "operations": [{{"type": "ADD"|"UPDATE"|"TAG"|"REMOVE", \
"section", "content", "skill_id", "metadata", "justification", "evidence"}}]}}}}"""

SKILL_MANAGER_PROMPT = (
    """\
# Skill manager
Date: {current_date}. Turn a reflection into small updates of the skillbook.
"""
    + _SKILL_MANAGER_INPUTS
    + _SKILL_MANAGER_RULES
    + """
## Output
JSON """
    + _UPDATE_FORMAT
    + "\n"
)

# The tool-using SkillManager (ACE_SKILL_LOOKUP=tools): each turn either calls tools or answers.
SKILL_MANAGER_TOOLS_PROMPT = (
    """\
# Skill manager with tools
Date: {current_date}. Turn a reflection into small updates of the skillbook. The Skillbook \
table may show only part of the skillbook: search it before you add a skill.
"""
    + _SKILL_MANAGER_INPUTS
    + """
## Tools
- search_skills(query, k): the k skills most like the query (at most {max_k}), and the pending \
review proposals like it, marked with their proposal id.
- read_skill(skill_id): one skill in full.
Tool calls left: {calls_left}

## Tool results
{tool_results}
"""
    + _SKILL_MANAGER_RULES
    + """- A learning a pending proposal states: repeat that proposal's operation exactly, never \
a reworded one.

## Output
JSON {{"tool_calls": [{{"name": "search_skills"|"read_skill", "query", "k", "skill_id"}}], \
"update": null}} to call tools (only while calls are left), or {{"tool_calls": [], "update": \
{{"reasoning": str, "operations": [...]}}}} to answer, operations as: """
    + _UPDATE_FORMAT
    + "\n"
)


def wrap_skillbook_for_external_agent(
    skillbook: SkillbookLike, *, budget: PromptBudget | None = None, query: str = ""
) -> str:
    """The skillbook and how to use it, to paste into another agent's prompt; "" when empty.

    This is the one way to hand learned skills to an agent ACE does not run
    itself (a browser agent, a LangChain chain, a coding assistant). With a
    ``budget`` the skills table is cut to fit it, keeping the skills most
    relevant to ``query`` (the task), as the Agent's own prompt is.
    """
    if len(skillbook) == 0:
        return ""
    return (
        "## Learned strategies\n"
        f"{skillbook.as_prompt(budget, query)}\n\n"
        "## How to use them\n"
        f"{SKILLBOOK_USAGE_INSTRUCTIONS}\n"
    )
