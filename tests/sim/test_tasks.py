"""The synthetic task family: seeded, balanced, and unsolvable without the rule."""

from __future__ import annotations

from collections import Counter

import pytest

from ace_workers.core import AgentOutput, SimpleEnvironment
from ace_workers.sim import TOPICS, find_task, find_topic, make_tasks


def test_same_seed_same_tasks_and_another_seed_other_tasks() -> None:
    assert make_tasks(20, seed=5) == make_tasks(20, seed=5)
    assert make_tasks(20, seed=5) != make_tasks(20, seed=6)


def test_topics_are_spread_evenly() -> None:
    counts = Counter(s.metadata["topic"] for s in make_tasks(32, seed=1, topics=5))
    assert sorted(counts) == sorted(t.name for t in TOPICS[:5])
    assert set(counts.values()) == {6, 7}


def test_a_given_topic_list_is_used() -> None:
    chosen = [TOPICS[6], TOPICS[7]]
    assert {s.metadata["topic"] for s in make_tasks(10, topics=chosen)} == {"brix", "snod"}


@pytest.mark.parametrize("topics", [0, len(TOPICS) + 1, []])
def test_invalid_topic_choices_fail(topics: int | list[object]) -> None:
    with pytest.raises(ValueError):
        make_tasks(3, topics=topics)  # type: ignore[arg-type]


def test_ground_truth_follows_the_rule_and_echoing_the_input_is_wrong() -> None:
    env = SimpleEnvironment()
    for sample in make_tasks(200, seed=2, topics=len(TOPICS)):
        task = find_task(sample.question)
        assert task is not None
        topic, value = task
        assert (topic.name, value) == (sample.metadata["topic"], sample.metadata["input"])
        assert sample.ground_truth == topic.solve(value)
        echo = AgentOutput(reasoning="", final_answer=value)
        assert env.evaluate(sample, echo).metrics["accuracy"] == 0.0


def test_each_rule_statement_is_recognised_for_its_topic_only() -> None:
    for topic in TOPICS:
        assert topic.name in topic.rule
        assert topic.is_stated_by(topic.rule)
        assert find_topic(topic.rule) is topic
        others = [t for t in TOPICS if t is not topic]
        assert not any(other.is_stated_by(topic.rule) for other in others)
        assert not topic.is_stated_by(f"For {topic.name} questions, think carefully.")
