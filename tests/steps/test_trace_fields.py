"""A dict trace reaches the Reflector whole: common field names map onto its arguments, the rest is shown."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from ace_workers.core import ReflectorOutput, SkillManagerOutput, UpdateBatch
from ace_workers.roles import Reflector, SkillManager
from ace_workers.roles.helpers import MAX_TRACE_CHARS
from ace_workers.runners import TraceAnalyser
from ace_workers.steps.trace_fields import read_trace


class PromptRecorder:
    """An LLM client that records each prompt and answers with an empty reflection or update."""

    def __init__(self) -> None:
        self.prompts: dict[str, list[str]] = {}

    def complete(self, prompt: str, **kwargs: Any) -> str:
        raise AssertionError("the roles use structured output only")

    def complete_structured(self, prompt: str, response_model: type[BaseModel], **kwargs: Any) -> Any:
        self.prompts.setdefault(response_model.__name__, []).append(prompt)
        if response_model is ReflectorOutput:
            return ReflectorOutput(reasoning="r", error_identification="", root_cause_analysis="")
        return SkillManagerOutput(update=UpdateBatch(reasoning="nothing to add", operations=[]))


def reflector_prompt_for(trace: dict[str, Any]) -> str:
    llm = PromptRecorder()
    analyser = TraceAnalyser.from_roles(reflector=Reflector(llm), skill_manager=SkillManager(llm))
    [result] = analyser.run([trace])
    assert result.ok, result.error
    [prompt] = llm.prompts["ReflectorOutput"]
    return prompt


def test_the_spec_example_task_and_output_reach_the_reflector_as_question_and_answer() -> None:
    prompt = reflector_prompt_for({"task": "What is the capital of France?", "output": "Lyon"})
    assert "What is the capital of France?" in prompt
    assert "Lyon" in prompt


def test_a_field_with_no_argument_of_its_own_is_rendered_into_the_trace_section() -> None:
    prompt = reflector_prompt_for(
        {"question": "Book a flight", "tool_calls": [{"name": "search_flights", "status": 500}]}
    )
    trace_section = prompt.split("## Trace", 1)[1]
    assert "search_flights" in trace_section
    assert "500" in trace_section


def test_an_oversize_field_is_cut_to_the_trace_budget() -> None:
    huge = "x" * (3 * MAX_TRACE_CHARS)
    prompt = reflector_prompt_for({"question": "Summarise the log", "log": huge})
    assert f"(trace cut at {MAX_TRACE_CHARS} of" in prompt
    assert len(prompt) < 2 * MAX_TRACE_CHARS


def test_each_argument_takes_the_first_name_present_and_a_second_name_is_kept_as_extra() -> None:
    fields = read_trace(
        {
            "question": "Q",
            "task": "the same task, said differently",
            "final_answer": "A",
            "thoughts": "T",
            "expected_output": "E",
            "critique": "C",
            "cited_skill_ids": ["math-00001"],
            "context": "",
            "steps": None,
        }
    )
    assert (fields.question, fields.answer, fields.reasoning) == ("Q", "A", "T")
    assert (fields.ground_truth, fields.feedback, fields.skill_ids) == ("E", "C", ["math-00001"])
    # Nothing recorded is dropped; empty fields say nothing and are left out.
    assert fields.extra == {"task": "the same task, said differently"}


def test_structured_values_become_text_for_the_typed_arguments() -> None:
    fields = read_trace({"input": {"city": "Paris"}, "response": ["a", "b"], "skill_ids": "math-00002"})
    assert fields.question == '{"city": "Paris"}'
    assert fields.answer == '["a", "b"]'
    assert fields.skill_ids == ["math-00002"]
    assert fields.extra == {}
