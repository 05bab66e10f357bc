"""Agent: the prompt it sends, cited skill ids, retries passed through, errors not hidden."""

from __future__ import annotations

import re

import pytest

from ace_workers.core import AgentOutput, ReflectorOutput, Skillbook, SkillbookView
from ace_workers.errors import LLMError, RetriesExhausted
from ace_workers.protocols import AgentLike
from ace_workers.roles import Agent
from ace_workers.sim import SimulatedLLM
from tests.support.llms import RecordingLLM


def make_llm(reasoning: str = "No skill needed.", answer: str = "42") -> RecordingLLM:
    return RecordingLLM({AgentOutput: AgentOutput(reasoning=reasoning, final_answer=answer)})


def test_agent_satisfies_the_protocol() -> None:
    assert isinstance(Agent(make_llm()), AgentLike)


def test_prompt_holds_skillbook_question_context_and_todays_date(skillbook: Skillbook) -> None:
    llm = make_llm()
    Agent(llm).generate("What is 6 x 7?", "Answer with a number.", SkillbookView(skillbook))
    prompt = llm.last_prompt
    assert skillbook.as_prompt() in prompt
    assert "## Question\nWhat is 6 x 7?\n" in prompt
    assert "## Context\nAnswer with a number.\n" in prompt
    assert "## Reflection\n(none)\n" in prompt
    assert "{current_date}" not in prompt
    assert re.search(r"Date: \d{4}-\d{2}-\d{2}\.", prompt)


def test_prompt_holds_a_previous_reflection_as_json(skillbook: Skillbook) -> None:
    llm = make_llm()
    reflection = ReflectorOutput(reasoning="Wrong unit.", key_insight="Convert to metres first.")
    Agent(llm).generate("q", "", skillbook, reflection=reflection)
    assert '"key_insight":"Convert to metres first."' in llm.last_prompt
    assert "## Context\n(none)\n" in llm.last_prompt


def test_cited_skill_ids_come_from_the_reasoning(skillbook: Skillbook) -> None:
    reasoning = (
        "Per [data_loading-00001] I stream the file; [math-00002] and again [data_loading-00001]; "
        "[ghost-00099] is not in the skillbook; [Not-An-Id] is not an id."
    )
    output = Agent(make_llm(reasoning)).generate("q", "", skillbook)
    # Every well-formed citation is kept, in order, once; unknown ids too (documented).
    assert output.skill_ids == ["data_loading-00001", "math-00002", "ghost-00099"]
    assert output.final_answer == "42"


def test_a_section_with_a_hyphen_gives_an_underscored_id_prefix() -> None:
    book = Skillbook()
    skill = book.add_skill("data-loading", "Stream large files.")
    assert skill.id == "data_loading-00001"
    output = Agent(make_llm(f"Using [{skill.id}].")).generate("q", "", book)
    assert output.skill_ids == [skill.id]


def test_max_retries_and_extra_kwargs_reach_the_client(skillbook: Skillbook) -> None:
    llm = make_llm()
    Agent(llm, max_retries=5).generate("q", "", skillbook, temperature=0.0)
    assert llm.last_kwargs == {"max_retries": 5, "temperature": 0.0}
    assert llm.calls[-1][1] is AgentOutput


def test_a_custom_template_may_use_a_subset_of_the_placeholders(skillbook: Skillbook) -> None:
    llm = make_llm()
    Agent(llm, "Q: {question}").generate("why?", "", skillbook)
    assert llm.last_prompt == "Q: why?"


def test_llm_errors_propagate() -> None:
    with pytest.raises(LLMError):
        Agent(SimulatedLLM(failure_rate=1.0)).generate("q", "", Skillbook())


def test_max_retries_bounds_the_clients_attempts() -> None:
    with pytest.raises(RetriesExhausted) as info:
        Agent(SimulatedLLM(malformed_rate=1.0), max_retries=2).generate("q", "", Skillbook())
    assert info.value.attempts == 2
