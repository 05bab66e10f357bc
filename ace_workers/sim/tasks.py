"""SIMULATION: a synthetic task family with hidden rules, for the simulated LLM to learn.

Each topic (a made-up word such as "zorb") hides one rule that maps an input
to the answer, for example "reverse the digits". An agent that does not know
the rule echoes the input back, which is always wrong: inputs are drawn so
that the rule changes them. Each rule has a canonical one-sentence statement,
the text a learned skill holds, and a keyword phrase any statement of the
rule contains, by which the simulator recognises it in a skillbook.

A topic can also state its rule in other words (:attr:`Topic.paraphrases`, each
holding one of its :attr:`Topic.keywords`), so that the same rule learned from
different samples reads differently: :meth:`Topic.phrase_rule` picks one per
sample from a seeded RNG. Duplication and deduplication are then measured on
restatements, not on identical strings.

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
    "WRONG_KEYWORDS",
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
# The phrase every canonical statement of a topic's wrong rule contains; no right rule's keyword is in it.
WRONG_KEYWORD = "input unchanged"
# Every phrase a statement of a wrong rule may hold instead (paraphrases); none holds a right keyword.
WRONG_KEYWORDS = (WRONG_KEYWORD, "echo the input", "input exactly as given")
# The wrong rule in other words, one of WRONG_KEYWORDS each; {name} is the topic's, {Name} capitalised.
WRONG_PARAPHRASES = (
    "In a {name} puzzle, just echo the input back.",
    "{Name} puzzles are answered with the input exactly as given.",
)


@dataclass(frozen=True)
class Topic:
    """One task type and its hidden rule."""

    name: str
    rule: str  # the canonical statement: what a skill that teaches this rule says
    keyword: str  # a phrase the canonical statement contains
    solve: Callable[[str], str]
    make_input: Callable[[random.Random], str]
    # The rule in other words, each holding the keyword or one of other_keywords.
    paraphrases: tuple[str, ...] = ()
    other_keywords: tuple[str, ...] = ()

    @property
    def keywords(self) -> tuple[str, ...]:
        """Every phrase by which a statement of the rule is recognised, the canonical keyword first."""
        return (self.keyword, *self.other_keywords)

    def is_stated_by(self, text: str) -> bool:
        """True if ``text`` states this topic's rule (names the topic and one of the rule's keywords)."""
        return self._names_topic_and(text, self.keywords)

    def phrase_rule(self, value: str, *, seed: int = 0, wrong: bool = False) -> str:
        """The rule (or, ``wrong``, the wrong rule) as learned from input ``value``: the canonical
        statement or a paraphrase, chosen by an RNG seeded with ``seed``, the topic and the input."""
        wording = [self.wrong_rule, *self._wrong_paraphrases()] if wrong else [self.rule, *self.paraphrases]
        # A string seed is hashed with SHA-512 by random: the same choice in every process.
        return random.Random(f"{seed}:{self.name}:{value}").choice(wording)

    def _wrong_paraphrases(self) -> list[str]:
        return [text.format(name=self.name, Name=self.name.capitalize()) for text in WRONG_PARAPHRASES]

    @property
    def wrong_rule(self) -> str:
        """A plausible but wrong rule for this topic: what misleading feedback teaches."""
        return f"For {self.name} questions, answer with the {WRONG_KEYWORD}."

    def is_wrongly_stated_by(self, text: str) -> bool:
        """True if ``text`` states this topic's wrong rule (names the topic and one of WRONG_KEYWORDS)."""
        return self._names_topic_and(text, WRONG_KEYWORDS)

    @staticmethod
    def solve_wrong(value: str) -> str:
        """The answer the wrong rule gives: the input itself, which the right rule always changes."""
        return value

    def _names_topic_and(self, text: str, keywords: Sequence[str]) -> bool:
        lowered = text.lower()
        # The keywords first: a plain substring test, where a skillbook of 100,000 skills is read.
        if not any(keyword in lowered for keyword in keywords):
            return False
        return re.search(rf"\b{re.escape(self.name)}\b", lowered) is not None

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
        paraphrases=(
            "In a zorb puzzle, write the input's digits in reverse order.",
            "Zorb puzzles want the digits backwards: read the number right to left.",
            "To solve zorb, reverse the digits of the number you are given.",
        ),
        other_keywords=("digits in reverse order", "digits backwards"),
    ),
    Topic(
        name="flux",
        rule="For flux questions, repeat the input word twice.",
        keyword="repeat",
        solve=lambda v: v + v,
        make_input=lambda rng: _word(rng, 5, lambda v: True),
        paraphrases=(
            "In a flux puzzle, write the word twice with no space between.",
            "Flux puzzles want two copies of the input word, joined.",
            "To solve flux, repeat the word you are given once more after itself.",
        ),
        other_keywords=("write the word twice", "two copies"),
    ),
    Topic(
        name="quill",
        rule="For quill questions, double the input number.",
        keyword="double",
        solve=lambda v: str(int(v) * 2),
        make_input=lambda rng: _number(rng, 3, lambda v: True),
        paraphrases=(
            "In a quill puzzle, multiply the input by 2.",
            "Quill puzzles want the number times two.",
            "To solve quill, double the number you are given.",
        ),
        other_keywords=("multiply the input by 2", "times two"),
    ),
    Topic(
        name="mirp",
        rule="For mirp questions, sum the digits of the input.",
        keyword="sum the digits",
        solve=lambda v: str(sum(int(d) for d in v)),
        make_input=lambda rng: _number(rng, 4, lambda v: True),
        paraphrases=(
            "In a mirp puzzle, add up the digits of the number.",
            "Mirp puzzles want the total of its digits as the answer.",
            "To solve mirp, sum the digits of the number you are given.",
        ),
        other_keywords=("add up the digits", "total of its digits"),
    ),
    Topic(
        name="tarn",
        rule="For tarn questions, sort the letters of the input alphabetically.",
        keyword="sort the letters",
        solve=lambda v: "".join(sorted(v)),
        make_input=lambda rng: _word(rng, 5, lambda v: "".join(sorted(v)) != v),
        paraphrases=(
            "In a tarn puzzle, put the letters in alphabetical order.",
            "Tarn puzzles want you to alphabetise the letters of the word.",
            "To solve tarn, sort the letters of the word you are given from a to z.",
        ),
        other_keywords=("letters in alphabetical order", "alphabetise the letters"),
    ),
    Topic(
        name="vell",
        rule="For vell questions, count the vowels in the input word.",
        keyword="count the vowels",
        solve=lambda v: str(sum(c in _VOWELS for c in v)),
        make_input=lambda rng: _word(rng, 6, lambda v: True),
        paraphrases=(
            "In a vell puzzle, answer with the number of vowels in the word.",
            "Vell puzzles ask how many vowels the word holds.",
            "To solve vell, count the vowels of the word you are given.",
        ),
        other_keywords=("number of vowels", "how many vowels"),
    ),
    Topic(
        name="brix",
        rule="For brix questions, add 17 to the input number.",
        keyword="add 17",
        solve=lambda v: str(int(v) + 17),
        make_input=lambda rng: _number(rng, 3, lambda v: True),
        paraphrases=(
            "In a brix puzzle, answer with the number plus 17.",
            "Brix puzzles want you to increase the input by 17.",
            "To solve brix, add 17 to the number you are given.",
        ),
        other_keywords=("plus 17", "increase the input by 17"),
    ),
    Topic(
        name="snod",
        rule="For snod questions, reverse the letters of the input word.",
        keyword="reverse the letters",
        solve=lambda v: v[::-1],
        make_input=lambda rng: _word(rng, 5, _not_palindrome),
        paraphrases=(
            "In a snod puzzle, write the letters in reverse order.",
            "Snod puzzles want you to spell the word backwards.",
            "To solve snod, reverse the letters of the word you are given.",
        ),
        other_keywords=("letters in reverse order", "spell the word backwards"),
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
