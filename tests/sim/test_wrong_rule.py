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


def test_misleading_lessons_vote_against_a_proven_skill_and_replace_it_once_they_outweigh_it() -> None:
    book = Skillbook()
    learn(book, failure_traces(6, topics=2))
    assert accuracy(book, topics=2) == 1.0
    zorb_id = {s.section: s.id for s in book.skills()}["zorb"]
    helpful = _skill(book, zorb_id).helpful
    assert helpful >= 1  # restated lessons voted for it
    misleading = misleading_traces(helpful + 2, topics=[ZORB])
    learn(book, misleading[:helpful])
    zorb = _skill(book, zorb_id)
    # Each misleading lesson is one vote against the skill, not a rewrite.
    assert (zorb.content, zorb.helpful, zorb.harmful) == (ZORB.rule, helpful, helpful)
    assert accuracy(book, topics=2) == 1.0
    learn(book, misleading[helpful : helpful + 1])
    assert (_skill(book, zorb_id).content, _skill(book, zorb_id).harmful) == (ZORB.rule, helpful + 1)
    learn(book, misleading[helpful + 1 :])  # against a skill that harmed more than it helped: replaced
    assert book.get_skill(zorb_id) is None
    (wrong,) = [s for s in book.skills() if s.section == "zorb"]
    assert (wrong.content, wrong.helpful, wrong.harmful) == (ZORB.wrong_rule, 0, 0)  # its votes start afresh
    assert len(book) == 2
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


def test_right_feedback_votes_against_the_wrong_skill_then_replaces_it() -> None:
    book = Skillbook()
    learn(book, misleading_traces(1, topics=[ZORB]))
    (wrong,) = book.skills()
    assert wrong.content == ZORB.wrong_rule
    right = failure_traces(2, topics=[ZORB])
    learn(book, right[:1])
    (voted,) = book.skills()
    assert (voted.id, voted.content, voted.harmful) == (wrong.id, ZORB.wrong_rule, 1)
    learn(book, right[1:])
    (fixed,) = book.skills()
    assert fixed.id != wrong.id and fixed.content == ZORB.rule


def test_a_lesson_restating_one_skill_votes_against_the_skill_contradicting_it_too() -> None:
    book = Skillbook()
    right = book.add_skill("zorb", ZORB.rule)
    wrong = book.add_skill("zorb", ZORB.wrong_rule)
    learn(book, failure_traces(1, topics=[ZORB]))
    assert (_skill(book, right.id).helpful, _skill(book, wrong.id).harmful) == (1, 1)
    learn(book, failure_traces(2, seed=5, topics=[ZORB]))  # harmful now exceeds helpful: removed
    assert book.get_skill(wrong.id) is None
    assert [s.content for s in book.skills()] == [ZORB.rule]
