"""A big skillbook whose zorb rule the SkillManager's budgeted slice leaves out, for the lookup tests.

The slice is chosen for the whole reflection (its diagnosis and the question), the
lookup for each learning alone. 300 notes share the rule's rarer words and the
diagnosis's words, so they outrank the rule for the whole reflection and fill the
slice; for the learning alone, the rule shares the most and comes first.
"""

from __future__ import annotations

from ace_workers.core import Skillbook
from ace_workers.core.outputs import ExtractedLearning, ReflectorOutput

ZORB_RULE = "For zorb questions, reverse the digits of the input."
# The skill that states it already, worded otherwise: an ADD of the rule is no exact duplicate of it,
# which apply would drop by itself.
ZORB_SKILL = "Zorb questions: reverse the digits of the input."
# A wording of the same rule, as a pending proposal might hold it.
ZORB_RULE_REWORDED = "Zorb questions: always reverse the digits of the input before answering."
ZORB_QUESTION_CONTEXT = "question: Solve the zorb puzzle. Input: 1234\nground_truth: 4321"
_NOTES = 300


def crowded_skillbook(size: int = 10_000) -> tuple[Skillbook, str]:
    """A skillbook of ``size`` skills stating the zorb rule once (as ZORB_SKILL), and that skill's id."""
    book = Skillbook()
    for number in range(_NOTES):
        book.add_skill(
            "zorb-notes",
            f"Zorb input digits: reverse them only after the agent guessed instead of applying a rule "
            f"to solve the puzzle (case {number}).",
        )
    rule = book.add_skill("zorb", ZORB_SKILL)
    for number in range(size - _NOTES - 1):
        book.add_skill(f"topic-{number % 50}", f"Check gauge {number} before turning crank {number % 13}.")
    return book, rule.id


def zorb_reflection() -> ReflectorOutput:
    """The simulated Reflector's lesson from a failed zorb attempt: the rule, as its one learning."""
    return ReflectorOutput(
        reasoning="For input 1234 the answer should be '4321', not '1234'.",
        error_identification="The agent guessed instead of applying the zorb rule.",
        correct_approach=ZORB_RULE,
        key_insight=ZORB_RULE,
        extracted_learnings=[ExtractedLearning(learning=ZORB_RULE, evidence="input 1234")],
    )
