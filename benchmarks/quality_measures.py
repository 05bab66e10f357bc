"""What benchmarks/learning_quality.py measures (recall, duplication, harm), and its distractors.

Each measure reads what is there (the skills, the proposals, the prompt the Agent is
sent) and recognises a statement of a hidden rule the way the simulator does
(:meth:`~ace_workers.sim.Topic.is_stated_by`, any wording), so a paraphrase counts as
the rule it states. Nothing is assumed from what learning was asked to do.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple

from ace_workers.core import Skill, Skillbook, SkillbookView
from ace_workers.core.environments import Sample
from ace_workers.sim import Topic
from ace_workers.sim.parsing import parse_sections, parse_skill_table, section_value

__all__ = [
    "SkillText",
    "active_skills",
    "distractor_skillbook",
    "harmful_topics",
    "ideas_of",
    "prompt_skill_ids",
    "rule_of",
    "rule_recall",
    "skills_per_rule",
]

# A rule as a measure names it: the topic, and whether it is the right rule (True) or the wrong one.
Rule = tuple[str, bool]
DISTRACTOR_SECTIONS = 40
NEAR_MISS_SHARE = 0.1  # distractors written in the task family's own words, competing for the prompt
TOPIC_NEAR_MISSES = 20  # distractors per topic that name it, as other advice about a task type does
VOCABULARY = 5_000
DISTRACTOR_TIME = "2026-01-01T00:00:00+00:00"
# Advice that states no rule; none of it repeats the simulator's task context ("Answer with the
# result only."), so a distractor matches a question by the question's own words only.
NEAR_MISS_ADVICE = (
    "check the input length first",
    "read the whole input first",
    "look for a pattern in the input",
    "trim the input before you start",
    "try a smaller case first",
    "note how long it took",
    "ask for help when unsure",
    "log the attempt",
)


class SkillText(NamedTuple):
    """What the measures read of a skill."""

    id: str
    section: str
    content: str


def active_skills(book: Skillbook | SkillbookView) -> list[SkillText]:
    """The active skills of ``book``, read as columns: no copy of each skill, at 100,000 skills."""
    columns = book.skill_columns(["id", "section", "content", "status"])
    rows = zip(columns["id"], columns["section"], columns["content"], columns["status"], strict=True)
    return [SkillText(i, section, content) for i, section, content, status in rows if status == "active"]


def rule_of(text: str, topics: Sequence[Topic]) -> Rule | None:
    """The rule ``text`` states, right or wrong, in any wording; None if it states none."""
    lowered = text.lower()
    if not any(topic.name in lowered for topic in topics):
        return None  # names no topic: the common case among 100,000 distractors, decided cheaply
    for topic in topics:
        if topic.is_stated_by(text):
            return topic.name, True
        if topic.is_wrongly_stated_by(text):
            return topic.name, False
    return None


def skills_per_rule(skills: Iterable[SkillText], topics: Sequence[Topic]) -> tuple[int, int]:
    """Active skills that state a rule, and the distinct rules they state."""
    rules = [rule for rule in (rule_of(skill.content, topics) for skill in skills) if rule is not None]
    return len(rules), len(set(rules))


def ideas_of(
    operations_by_proposal: Iterable[Sequence[dict[str, object]]], topics: Sequence[Topic]
) -> set[Rule]:
    """The distinct rules the ADD and UPDATE operations of some proposals state."""
    return {
        rule
        for operations in operations_by_proposal
        for op in operations
        if op.get("type") in ("ADD", "UPDATE")
        and (rule := rule_of(str(op.get("content") or ""), topics)) is not None
    }


def harmful_topics(skills: Iterable[SkillText], topics: Sequence[Topic]) -> set[str]:
    """The topics an active skill states the wrong rule of."""
    return {
        rule[0] for skill in skills if (rule := rule_of(skill.content, topics)) is not None and not rule[1]
    }


def prompt_skill_ids(prompt: str) -> set[str]:
    """The ids of the skills an Agent prompt's skillbook table shows."""
    return {row.id for row in parse_skill_table(section_value(parse_sections(prompt), "Skillbook"))}


def rule_recall(
    skills: Sequence[SkillText],
    questions: Sequence[Sample],
    topic_of: Callable[[Sample], Topic | None],
    prompt_for: Callable[[Sample], str],
) -> tuple[int, int]:
    """Of the questions whose topic's rule the skillbook has learned, how many are sent a prompt showing it.

    Returns (shown, needed): a question needs its topic's rule when an active skill
    states it; the rule is shown when at least one such skill is in ``prompt_for``'s prompt.
    """
    asked = {topic.name: topic for topic in map(topic_of, questions) if topic is not None}
    by_topic: dict[str, set[str]] = {}
    for skill in skills:
        for topic in asked.values():
            if rule_of(skill.content, [topic]) == (topic.name, True):
                by_topic.setdefault(topic.name, set()).add(skill.id)
    shown = needed = 0
    for question in questions:
        topic = topic_of(question)
        if topic is None or topic.name not in by_topic:
            continue
        needed += 1
        shown += bool(by_topic[topic.name] & prompt_skill_ids(prompt_for(question)))
    return shown, needed


def _common_words(questions: Sequence[Sample], topics: Sequence[Topic]) -> list[str]:
    """The words at least two questions share (a task's own input is no such word), topic names left out."""
    seen: dict[str, int] = {}
    for question in questions:
        for word in {word.strip(".,:;?!").lower() for word in question.question.split()}:
            if word.isalpha():
                seen[word] = seen.get(word, 0) + 1
    names = {topic.name for topic in topics}
    return sorted(word for word, count in seen.items() if count >= 2 and word not in names)


def distractor_skillbook(
    count: int,
    questions: Sequence[Sample],
    topics: Sequence[Topic],
    *,
    seed: int = 7,
    learned: Sequence[Skill] = (),
) -> Skillbook:
    """``count`` skills that state no rule, as a long-lived skillbook of other work holds, and ``learned``.

    Most are 12-20 words of a fixed vocabulary over DISTRACTOR_SECTIONS sections; a
    NEAR_MISS_SHARE are written in the task family's own words (those two of its questions
    share, topic names left out: for the simulator "solve", "puzzle", "input"), and
    TOPIC_NEAR_MISSES per topic name the topic, with advice that states no rule: they
    compete with the learned rules for a place in the prompt.
    """
    rng = random.Random(seed)
    words = [f"w{index}{chr(97 + index % 26)}" for index in range(VOCABULARY)]
    family_words = _common_words(questions, topics)
    texts = [
        f"For {topic.name} puzzles, {rng.choice(NEAR_MISS_ADVICE)} when {rng.choice(words)} shows."
        for topic in topics
        for _ in range(TOPIC_NEAR_MISSES)
    ][:count]
    while len(texts) < count:
        if family_words and rng.random() < NEAR_MISS_SHARE:
            said = " ".join(rng.choices(family_words, k=3))
            texts.append(f"When a question says {said}, {rng.choice(NEAR_MISS_ADVICE)}.")
        else:
            texts.append(f"When {' '.join(rng.choices(words, k=rng.randint(12, 20)))}, check it first.")
    skills: dict[str, dict[str, Any]] = {}
    sections: dict[str, list[str]] = {}
    for index, text in enumerate(texts):
        if rule_of(text, topics) is not None:
            continue  # a distractor must never state a rule: recall and duplication would count it
        section = f"notes_{index % DISTRACTOR_SECTIONS}"
        skill_id = f"{section}-{index + 1:06d}"
        # Built as the file format's data, not with add_skill: 100,000 skills in seconds.
        skills[skill_id] = {
            "id": skill_id,
            "section": section,
            "content": text,
            "helpful": rng.randint(1, 5) if index % 3 == 0 else 0,
            "created_at": DISTRACTOR_TIME,
            "updated_at": DISTRACTOR_TIME,
        }
        sections.setdefault(section, []).append(skill_id)
    for skill in learned:
        skills[skill.id] = skill.to_dict()
        sections.setdefault(skill.section, []).append(skill.id)
    data = {"skills": skills, "sections": sections, "next_id": count, "similarity_decisions": {}}
    return Skillbook.from_dict(data)
