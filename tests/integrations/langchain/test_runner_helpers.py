"""The integration runners' spec helpers, through LangChain: dedup_config, get_strategies, the
save_skillbook / load_skillbook / wait_for_learning names."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ace_workers import LangChain
from ace_workers.core import Skillbook
from ace_workers.dedup import DeduplicationConfig
from ace_workers.errors import SkillbookFormatError
from ace_workers.roles import Reflector, SkillManager
from ace_workers.sim import SimulatedLLM, make_tasks
from tests.support.langchain_agents import replies, scripted
from tests.support.skillbooks import ZORB_RULE

RESTATED = "On zorb questions, reverse the digits of the input number."
OTHER = "For zorb questions, add one to the input."


def zorb_embedder(texts: list[str]) -> np.ndarray:
    # Every zorb skill looks alike, so every pair is reported and the LLM must tell them apart.
    return np.asarray([[float("zorb" in text.lower()), 0.01] for text in texts], dtype=np.float32)


def zorb_task() -> str:
    return make_tasks(1, topics=1)[0].question  # the chain answers "no idea"


def test_dedup_config_on_from_roles_builds_a_manager_on_the_skill_managers_llm() -> None:
    llm = SimulatedLLM()
    book = Skillbook()
    rule, restated, other = (book.add_skill("zorb", text).id for text in (ZORB_RULE, RESTATED, OTHER))
    runner = LangChain.from_roles(
        runnable=scripted(*replies("no idea")),
        reflector=Reflector(llm),
        skill_manager=SkillManager(llm),
        skillbook=book,
        # No auto-merge: only the LLM can merge, so a merge proves the manager asked it.
        dedup_config=DeduplicationConfig(embedding_provider=zorb_embedder, auto_merge_threshold=None),
        dedup_interval=1,
    )
    results = runner.run([zorb_task()])
    assert all(r.ok for r in results), [r.error for r in results]
    assert llm.call_count("ConsolidationResponse") == 1
    assert [s.id for s in book.skills()] == [rule, other]  # the restatement merged into the rule
    merged = book.get_skill(restated)
    assert merged is not None
    assert merged.status == "invalid"


def test_a_loaded_skillbook_is_the_one_the_next_run_prompts_with(tmp_path: Path) -> None:
    from langchain_core.prompts import ChatPromptTemplate

    llm = SimulatedLLM()
    chain = ChatPromptTemplate.from_template("{input}") | scripted(*replies("no idea"))
    teacher = LangChain.from_model(chain, ace_llm=llm)
    teacher.run([{"input": zorb_task()}])
    assert "reverse the digits" in teacher.get_strategies()
    teacher.save_skillbook(tmp_path / "zorb.json")

    model = scripted(*replies("no idea"))
    student = LangChain.from_model(ChatPromptTemplate.from_template("{input}") | model, ace_llm=llm)
    assert "reverse the digits" not in student.get_strategies()
    book = student.skillbook
    student.load_skillbook(tmp_path / "zorb.json")
    assert student.skillbook is book  # loaded in place: the steps hold this object
    assert [s.content for s in book.skills()] == [s.content for s in teacher.skillbook.skills()]
    student.run([{"input": zorb_task()}])
    assert "reverse the digits" in model.last_prompt()


def test_loading_a_broken_file_names_it_and_keeps_the_skillbook(tmp_path: Path) -> None:
    runner = LangChain.from_model(scripted("x"), ace_llm=SimulatedLLM())
    runner.skillbook.add_skill("zorb", ZORB_RULE)
    broken = tmp_path / "broken.json"
    broken.write_text('{"skills": {', encoding="utf-8")
    with pytest.raises(SkillbookFormatError, match=r"broken\.json"):
        runner.load(broken)
    assert [s.content for s in runner.skillbook.skills()] == [ZORB_RULE]


def test_wait_for_learning_waits_for_the_background_learning() -> None:
    runner = LangChain.from_model(scripted(*replies("no idea")), ace_llm=SimulatedLLM())
    results = runner.run([task.question for task in make_tasks(3, topics=1)], wait=False)
    runner.wait_for_learning(timeout=30)
    assert len(results) == 3
    assert runner.learning_stats["completed"] == 3
