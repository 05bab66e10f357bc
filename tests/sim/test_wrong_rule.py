"""The simulator can learn a WRONG rule from misleading feedback, and then answers wrong."""

from __future__ import annotations

from ace_workers.core import Skill, Skillbook, SkillbookView
from ace_workers.roles import Agent, Reflector, SkillManager
from ace_workers.runners import TraceAnalyser
from ace_workers.sim import TOPICS, SimulatedLLM, failure_traces, make_tasks, misleading_traces

ZORB = TOPICS[0]


def learn(book: Skillbook, traces: list[dict[str, str]]) -> None:
    """Learn from ``traces`` one at a time into ``book`` with the simulated roles."""
    llm = SimulatedLLM()
    analyser = TraceAnalyser.from_roles(
        reflector=Reflector(llm), skill_manager=SkillManager(llm), skillbook=book
    )
    for trace in traces:
        analyser.run([trace])


def accuracy(book: Skillbook, topics: int) -> float:
    """The share of 20 synthetic tasks the simulated agent answers right with ``book``."""
    agent = Agent(SimulatedLLM())
    tasks = make_tasks(20, seed=3, topics=topics)
    right = [
        t
        for t in tasks
        if agent.generate(t.question, t.context, SkillbookView(book)).final_answer == t.ground_truth
    ]
    return len(right) / len(tasks)


def test_a_topic_has_a_wrong_rule_that_no_right_rule_reads_as() -> None:
    for topic in TOPICS:
        assert topic.is_wrongly_stated_by(topic.wrong_rule)
        assert not topic.is_stated_by(topic.wrong_rule)
        assert not topic.is_wrongly_stated_by(topic.rule)
        assert topic.solve_wrong("1234") == "1234"


def test_misleading_lessons_vote_against_a_proven_skill_and_rewrite_it_once_they_outweigh_it() -> None:
    book = Skillbook()
    learn(book, failure_traces(6, topics=2))
    assert accuracy(book, topics=2) == 1.0
    zorb_id = {s.section: s.id for s in book.skills()}["zorb"]
    helpful = _skill(book, zorb_id).helpful
    assert helpful >= 1  # restated lessons voted for it
    misleading = misleading_traces(helpful + 1, topics=[ZORB])
    learn(book, misleading[:helpful])
    zorb = _skill(book, zorb_id)
    # Each misleading lesson is one vote against the proven skill, not a rewrite.
    assert (zorb.content, zorb.helpful, zorb.harmful) == (ZORB.rule, helpful, helpful)
    assert accuracy(book, topics=2) == 1.0
    learn(book, misleading[helpful:])  # harmful votes reach helpful ones: the next lesson rewrites it
    zorb = _skill(book, zorb_id)
    assert zorb.content == ZORB.wrong_rule
    assert len(book) == 2  # updated in place, not added beside it
    # Every zorb task (half of them) is now answered wrong; flux still right.
    assert accuracy(book, topics=2) == 0.5


def _skill(book: Skillbook, skill_id: str) -> Skill:
    skill = book.get_skill(skill_id)
    assert skill is not None
    return skill


def test_the_agent_cites_the_wrong_skill_and_echoes_the_input() -> None:
    book = Skillbook()
    skill = book.add_skill("zorb", ZORB.wrong_rule)
    (task,) = make_tasks(1, seed=1, topics=[ZORB])
    output = Agent(SimulatedLLM()).generate(task.question, task.context, SkillbookView(book))
    assert output.final_answer == task.metadata["input"]
    assert output.skill_ids == [skill.id]


def test_right_feedback_again_rewrites_the_wrong_skill_back() -> None:
    book = Skillbook()
    learn(book, misleading_traces(1, topics=[ZORB]))
    (wrong,) = book.skills()
    assert wrong.content == ZORB.wrong_rule
    learn(book, failure_traces(1, topics=[ZORB]))
    (fixed,) = book.skills()
    assert (fixed.id, fixed.content) == (wrong.id, ZORB.rule)
