"""SIMULATION: a synthetic task family with hidden rules, for the simulated LLM to learn.

Each topic (a made-up word such as "zorb") hides one rule that maps an input
to the answer, for example "reverse the digits". An agent that does not know
the rule echoes the input back, which is always wrong: inputs are drawn so
that the rule changes them. Each rule has a canonical one-sentence statement,
the text a learned skill holds, and a keyword phrase any statement of the
rule contains, by which the simulator recognises it in a skillbook.

Nothing here calls a model; it exists for tests, the demo and benchmarks.
"""

from __future__ import annotations

import random
import re
import string
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..core.environments import Sample

__all__ = [
    "TOPICS",
    "WRONG_KEYWORD",
    "Topic",
    "failure_traces",
    "find_task",
    "find_topic",
    "make_tasks",
    "misleading_traces",
]

QUESTION_TEMPLATE = "Solve the {topic} puzzle. Input: {value}"
_INPUT = re.compile(r"\bInput:\s*([A-Za-z0-9]+)")
_VOWELS = frozenset("aeiou")
# The phrase every statement of a topic's wrong rule contains; no right rule's keyword is in it.
WRONG_KEYWORD = "input unchanged"


@dataclass(frozen=True)
class Topic:
    """One task type and its hidden rule."""

    name: str
    rule: str  # the canonical statement: what a skill that teaches this rule says
    keyword: str  # a phrase every statement of the rule contains
    solve: Callable[[str], str]
    make_input: Callable[[random.Random], str]

    def is_stated_by(self, text: str) -> bool:
        """True if ``text`` states this topic's rule (names the topic and the rule's keyword)."""
        return self._names_topic_and(text, self.keyword)

    @property
    def wrong_rule(self) -> str:
        """A plausible but wrong rule for this topic: what misleading feedback teaches."""
        return f"For {self.name} questions, answer with the {WRONG_KEYWORD}."

    def is_wrongly_stated_by(self, text: str) -> bool:
        """True if ``text`` states this topic's wrong rule (names the topic and WRONG_KEYWORD)."""
        return self._names_topic_and(text, WRONG_KEYWORD)

    @staticmethod
    def solve_wrong(value: str) -> str:
        """The answer the wrong rule gives: the input itself, which the right rule always changes."""
        return value

    def _names_topic_and(self, text: str, keyword: str) -> bool:
        lowered = text.lower()
        return re.search(rf"\b{re.escape(self.name)}\b", lowered) is not None and keyword in lowered

    def make_question(self, value: str) -> str:
        """The question text for one input."""
        return QUESTION_TEMPLATE.format(topic=self.name, value=value)


def _number(rng: random.Random, digits: int, keep: Callable[[str], bool]) -> str:
    # Redraw until the rule is guaranteed to change the input: echoing must be wrong.
    while True:
        value = str(rng.randint(10 ** (digits - 1), 10**digits - 1))
        if keep(value):
            return value


def _word(rng: random.Random, length: int, keep: Callable[[str], bool]) -> str:
    while True:
        value = "".join(rng.choice(string.ascii_lowercase) for _ in range(length))
        if keep(value):
            return value


def _not_palindrome(value: str) -> bool:
    return value != value[::-1]


TOPICS: tuple[Topic, ...] = (
    Topic(
        name="zorb",
        rule="For zorb questions, reverse the digits of the input.",
        keyword="reverse the digits",
        solve=lambda v: v[::-1],
        make_input=lambda rng: _number(rng, 4, lambda v: _not_palindrome(v) and not v.endswith("0")),
    ),
    Topic(
        name="flux",
        rule="For flux questions, repeat the input word twice.",
        keyword="repeat",
        solve=lambda v: v + v,
        make_input=lambda rng: _word(rng, 5, lambda v: True),
    ),
    Topic(
        name="quill",
        rule="For quill questions, double the input number.",
        keyword="double",
        solve=lambda v: str(int(v) * 2),
        make_input=lambda rng: _number(rng, 3, lambda v: True),
    ),
    Topic(
        name="mirp",
        rule="For mirp questions, sum the digits of the input.",
        keyword="sum the digits",
        solve=lambda v: str(sum(int(d) for d in v)),
        make_input=lambda rng: _number(rng, 4, lambda v: True),
    ),
    Topic(
        name="tarn",
        rule="For tarn questions, sort the letters of the input alphabetically.",
        keyword="sort the letters",
        solve=lambda v: "".join(sorted(v)),
        make_input=lambda rng: _word(rng, 5, lambda v: "".join(sorted(v)) != v),
    ),
    Topic(
        name="vell",
        rule="For vell questions, count the vowels in the input word.",
        keyword="count the vowels",
        solve=lambda v: str(sum(c in _VOWELS for c in v)),
        make_input=lambda rng: _word(rng, 6, lambda v: True),
    ),
    Topic(
        name="brix",
        rule="For brix questions, add 17 to the input number.",
        keyword="add 17",
        solve=lambda v: str(int(v) + 17),
        make_input=lambda rng: _number(rng, 3, lambda v: True),
    ),
    Topic(
        name="snod",
        rule="For snod questions, reverse the letters of the input word.",
        keyword="reverse the letters",
        solve=lambda v: v[::-1],
        make_input=lambda rng: _word(rng, 5, _not_palindrome),
    ),
)


def _select_topics(topics: int | Sequence[Topic]) -> tuple[Topic, ...]:
    if isinstance(topics, int):
        if not 1 <= topics <= len(TOPICS):
            raise ValueError(f"topics must be between 1 and {len(TOPICS)}, got {topics}")
        return TOPICS[:topics]
    chosen = tuple(topics)
    if not chosen:
        raise ValueError("topics must not be empty")
    return chosen


def make_tasks(n: int, *, seed: int = 0, topics: int | Sequence[Topic] = 5) -> list[Sample]:
    """``n`` samples spread evenly over ``topics`` (the first k of TOPICS, or given ones), seeded.

    Each topic gets ``n // k`` or one more samples, in a shuffled order; the
    same arguments always give the same samples.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    chosen = _select_topics(topics)
    rng = random.Random(seed)
    order = [chosen[i % len(chosen)] for i in range(n)]
    rng.shuffle(order)
    samples = []
    for index, topic in enumerate(order):
        value = topic.make_input(rng)
        samples.append(
            Sample(
                question=topic.make_question(value),
                context="Answer with the result only.",
                ground_truth=topic.solve(value),
                metadata={"topic": topic.name, "input": value, "rule": topic.rule},
                id=f"{topic.name}-{index:04d}",
            )
        )
    return samples


def find_topic(text: str, topics: Sequence[Topic] = TOPICS) -> Topic | None:
    """The first topic named in ``text`` as a whole word, or None."""
    lowered = text.lower()
    for topic in topics:
        if re.search(rf"\b{re.escape(topic.name)}\b", lowered):
            return topic
    return None


def find_task(text: str, topics: Sequence[Topic] = TOPICS) -> tuple[Topic, str] | None:
    """The topic and input of a question (or any text holding one), or None."""
    topic = find_topic(text, topics)
    match = _INPUT.search(text)
    if topic is None or match is None:
        return None
    return topic, match.group(1)


def failure_traces(n: int, *, seed: int = 11, topics: int | Sequence[Topic] = 5) -> list[dict[str, str]]:
    """``n`` recorded failures on synthetic tasks: the simulated Reflector learns the rules from them."""
    return [
        {
            "question": t.question,
            "answer": "no idea",
            "ground_truth": t.ground_truth or "",
            "feedback": "Incorrect.",
        }
        for t in make_tasks(n, seed=seed, topics=topics)
    ]


def misleading_traces(n: int, *, seed: int = 13, topics: int | Sequence[Topic] = 5) -> list[dict[str, str]]:
    """``n`` traces whose feedback asserts each topic's wrong rule: learning from them plants a harmful skill.

    The agent's answer in them is the right one; the feedback calls it wrong and states
    :attr:`Topic.wrong_rule`. They carry no ground truth, so only the feedback judges.
    """
    by_name = {topic.name: topic for topic in _select_topics(topics)}
    return [
        {
            "question": task.question,
            "answer": task.ground_truth or "",
            "feedback": f"Incorrect. {by_name[task.metadata['topic']].wrong_rule}",
        }
        for task in make_tasks(n, seed=seed, topics=topics)
    ]
