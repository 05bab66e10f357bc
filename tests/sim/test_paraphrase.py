"""The simulator can paraphrase: one rule learned in different words from different samples."""

from __future__ import annotations

from ace_workers.core import Skillbook
from ace_workers.core.outputs import ReflectorOutput, SkillManagerOutput
from ace_workers.distributed.llms import model_client
from ace_workers.distributed.settings import WorkerSettings
from ace_workers.roles import Reflector, SkillManager
from ace_workers.runners import TraceAnalyser
from ace_workers.sim import TOPICS, SimulatedLLM, failure_traces, make_tasks, misleading_traces
from ace_workers.sim.behaviour import SimWorld
from ace_workers.sim.parsing import parse_sections, section_value

ZORB = TOPICS[0]


def test_every_paraphrase_states_its_rule_and_not_the_wrong_one() -> None:
    for topic in TOPICS:
        assert len(set(topic.paraphrases)) >= 3
        for text in topic.paraphrases:
            assert topic.is_stated_by(text), text
            assert not topic.is_wrongly_stated_by(text), text


def test_every_wrong_paraphrase_states_the_wrong_rule_and_not_the_right_one() -> None:
    for topic in TOPICS:
        wrongs = {topic.phrase_rule(str(value), wrong=True) for value in range(200)}
        assert len(wrongs) >= 3
        for text in wrongs:
            assert topic.is_wrongly_stated_by(text), text
            assert not topic.is_stated_by(text), text


def test_a_paraphrase_is_chosen_per_input_and_the_same_every_time() -> None:
    inputs = [t.metadata["input"] for t in make_tasks(40, seed=5, topics=[ZORB])]
    first = [ZORB.phrase_rule(value, seed=3) for value in inputs]
    assert first == [ZORB.phrase_rule(value, seed=3) for value in inputs]
    assert len(set(first)) == len(ZORB.paraphrases) + 1  # the canonical sentence is one of the choices
    assert first != [ZORB.phrase_rule(value, seed=4) for value in inputs]


def test_without_paraphrase_the_world_states_the_canonical_rule() -> None:
    assert SimWorld().state_rule(ZORB, "1234") == ZORB.rule
    assert SimWorld().state_rule(ZORB, "1234", wrong=True) == ZORB.wrong_rule


def learned_lessons(llm: SimulatedLLM, traces: list[dict[str, str]], book: Skillbook) -> set[str]:
    """Learn ``traces`` one at a time into ``book``; the distinct lessons the SkillManager was given."""
    analyser = TraceAnalyser.from_roles(
        reflector=Reflector(llm), skill_manager=SkillManager(llm), skillbook=book
    )
    lessons: set[str] = set()
    for trace in traces:
        analyser.run([trace])
        prompt = llm.last_prompt(SkillManagerOutput) or ""
        reflection = ReflectorOutput.model_validate_json(section_value(parse_sections(prompt), "Reflection"))
        lessons |= {item.learning for item in reflection.extracted_learnings}
    return lessons


def test_paraphrased_lessons_differ_and_a_manager_that_sees_the_skill_still_tags_it() -> None:
    book = Skillbook()
    lessons = learned_lessons(SimulatedLLM(paraphrase=True), failure_traces(12, topics=[ZORB]), book)
    assert len(lessons) >= 2  # the same rule reached the SkillManager in different words
    (skill,) = book.skills()  # every restatement recognised: one skill, voted for
    assert ZORB.is_stated_by(skill.content)
    assert skill.helpful == 11


def test_misleading_feedback_is_paraphrased_too() -> None:
    llm = SimulatedLLM(paraphrase=True, seed=1)
    lessons = set()
    for trace in misleading_traces(30, topics=[ZORB]):
        book = Skillbook()
        TraceAnalyser.from_roles(
            reflector=Reflector(llm), skill_manager=SkillManager(llm), skillbook=book
        ).run([trace])
        (skill,) = book.skills()
        assert ZORB.is_wrongly_stated_by(skill.content)
        lessons.add(skill.content)
    assert len(lessons) >= 2


def test_the_setting_turns_paraphrase_on_for_the_fleet() -> None:
    on = model_client("sim", WorkerSettings.from_env({"ACE_SIM_PARAPHRASE": "true"}))
    off = model_client("sim", WorkerSettings.from_env({}))
    assert isinstance(on, SimulatedLLM) and on.world.paraphrase
    assert isinstance(off, SimulatedLLM) and not off.world.paraphrase
