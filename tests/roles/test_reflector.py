"""Reflector: the attempt, ground truth, feedback, cited-skill excerpt and trace in its prompt."""

from __future__ import annotations

import pytest

from ace_workers.core import AgentOutput, ReflectorOutput, Skillbook, SkillbookView
from ace_workers.errors import LLMError
from ace_workers.protocols import ReflectorLike
from ace_workers.roles import MAX_TRACE_CHARS, Reflector
from ace_workers.sim import SimulatedLLM
from tests.support.llms import RecordingLLM

REPLY = ReflectorOutput(reasoning="Fine.", key_insight="Keep units consistent.")


def make_llm() -> RecordingLLM:
    return RecordingLLM({ReflectorOutput: REPLY})


def attempt(*skill_ids: str) -> AgentOutput:
    return AgentOutput(reasoning="Added 2 m and 30 cm.", final_answer="32", skill_ids=list(skill_ids))


def test_reflector_satisfies_the_protocol() -> None:
    assert isinstance(Reflector(make_llm()), ReflectorLike)


def test_prompt_holds_the_attempt_ground_truth_and_feedback(skillbook: Skillbook) -> None:
    llm = make_llm()
    reflection = Reflector(llm).reflect(
        "2 m + 30 cm?", attempt(), skillbook, ground_truth="2.3 m", feedback="Incorrect."
    )
    assert reflection == REPLY
    prompt = llm.last_prompt
    for expected in (
        "## Question\n2 m + 30 cm?\n",
        "## Agent reasoning\nAdded 2 m and 30 cm.\n",
        "## Agent answer\n32\n",
        "## Ground truth\n2.3 m\n",
        "## Feedback\nIncorrect.\n",
        "## Cited skills\n(none)\n",
        "## Trace\n(none)\n",
    ):
        assert expected in prompt


def test_missing_ground_truth_and_feedback_read_none(skillbook: Skillbook) -> None:
    llm = make_llm()
    Reflector(llm).reflect("q", attempt(), skillbook)
    assert "## Ground truth\n(none)\n" in llm.last_prompt
    assert "## Feedback\n(none)\n" in llm.last_prompt


def test_prompt_holds_only_the_cited_skills(skillbook: Skillbook) -> None:
    llm = make_llm()
    Reflector(llm).reflect("q", attempt("math-00002", "ghost-00042"), SkillbookView(skillbook))
    prompt = llm.last_prompt
    assert "## Cited skills\n[math-00002] Check units before adding quantities.\n" in prompt
    assert "Round only the final result." not in prompt  # not cited
    assert "Stream files" not in prompt  # not cited
    assert "ghost-00042" not in prompt  # cited, but no such skill


def test_a_raw_trace_is_rendered_bounded_and_not_sent_to_the_client(skillbook: Skillbook) -> None:
    llm = make_llm()
    trace = {"steps": ["open page", "click"], "log": "y" * (2 * MAX_TRACE_CHARS)}
    Reflector(llm).reflect("", AgentOutput(reasoning="", final_answer=""), skillbook, trace=trace)
    prompt = llm.last_prompt
    assert '## Trace\n{"steps": ["open page", "click"]' in prompt
    assert prompt.count("y") < MAX_TRACE_CHARS + 100
    assert "trace cut at 8000" in prompt
    assert "trace" not in llm.last_kwargs


def test_max_retries_and_extra_kwargs_reach_the_client(skillbook: Skillbook) -> None:
    llm = make_llm()
    Reflector(llm, max_retries=1).reflect("q", attempt(), skillbook, temperature=0.2)
    assert llm.last_kwargs == {"max_retries": 1, "temperature": 0.2}
    assert llm.calls[-1][1] is ReflectorOutput


def test_llm_errors_propagate(skillbook: Skillbook) -> None:
    with pytest.raises(LLMError):
        Reflector(SimulatedLLM(failure_rate=1.0)).reflect("q", attempt(), skillbook)
