"""Structured output through instructor and the real litellm code path, offline via mock_response."""

from __future__ import annotations

import json
import logging
import pickle
from collections.abc import Callable

import pytest
from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError

from ace_workers.core.outputs import AgentOutput
from ace_workers.errors import LLMError, RetriesExhausted
from ace_workers.protocols import LLMClientLike
from ace_workers.providers import InstructorClient, LiteLLMClient, wrap_with_instructor
from ace_workers.providers._lazy_imports import import_instructor
from tests.support.llms import FALLBACK, MOCK_USAGE, MODEL, ScriptedCompletion, auth_error, connection_error

Script = Callable[..., ScriptedCompletion]

VALID = json.dumps({"reasoning": "Applied [math-1]: 6 * 7.", "final_answer": "42"})
NOT_JSON = "The answer is 42."
MISSING_FIELD = json.dumps({"reasoning": "6 * 7."})


def make_llm(**options: object) -> LiteLLMClient:
    """A client with no backoff, so retries cost no time."""
    return LiteLLMClient(MODEL, api_key="sk-test", retry_wait_seconds=0.0, **options)  # type: ignore[arg-type]


def usage_times(n: int) -> dict[str, int]:
    return {key: value * n for key, value in MOCK_USAGE.items()}


@pytest.mark.parametrize("mode", [None, "JSON", "MD_JSON", "JSON_SCHEMA"])
def test_complete_structured_returns_a_validated_output_with_usage_in_raw(mode: str | None) -> None:
    structured = InstructorClient(make_llm(), mode=import_instructor().Mode[mode] if mode else None)

    output = structured.complete_structured("What is 6 * 7?", AgentOutput, mock_response=VALID)

    assert isinstance(output, AgentOutput)
    assert output.final_answer == "42"
    assert output.raw["model"] == MODEL
    assert output.raw["usage"] == MOCK_USAGE
    assert output.raw["cost"] > 0
    assert output.raw["attempts"] == 1


def test_litellm_client_delegates_structured_output_to_instructor() -> None:
    output = make_llm().complete_structured("What is 6 * 7?", AgentOutput, mock_response=VALID)

    assert output.final_answer == "42"
    assert output.raw["usage"] == MOCK_USAGE


class Answer(BaseModel):
    """A response model without a raw field (module level, so it pickles)."""

    final_answer: str


def test_a_model_without_raw_is_returned_as_validated() -> None:
    output = make_llm().complete_structured("What is 6 * 7?", Answer, mock_response=VALID)

    assert output == Answer(final_answer="42")


def test_output_is_a_plain_instance_of_the_requested_class_and_pickles() -> None:
    output = make_llm().complete_structured("What is 6 * 7?", AgentOutput, mock_response=VALID)

    # instructor itself returns an instance of a same-named subclass it generates.
    assert type(output) is AgentOutput
    assert output == AgentOutput(reasoning="Applied [math-1]: 6 * 7.", final_answer="42", raw=output.raw)
    copy = pickle.loads(pickle.dumps(output))
    assert copy == output
    assert copy.raw == output.raw


def test_validation_error_is_fed_back_and_the_model_reasked(script: Script) -> None:
    scripted = script(MISSING_FIELD, VALID)

    output = wrap_with_instructor(make_llm()).complete_structured("What is 6 * 7?", AgentOutput)

    assert output.final_answer == "42"
    assert output.raw["attempts"] == 2
    assert output.raw["usage"] == usage_times(2)
    reask = scripted.calls[1]["messages"]
    assert reask[-2] == {"role": "assistant", "content": MISSING_FIELD}
    assert "final_answer" in reask[-1]["content"]
    assert "Field required" in reask[-1]["content"]


@pytest.mark.parametrize("reply", [NOT_JSON, MISSING_FIELD])
def test_reply_failing_validation_every_time_raises_retries_exhausted(script: Script, reply: str) -> None:
    scripted = script(reply)
    structured = InstructorClient(make_llm(), max_retries=2)

    with pytest.raises(RetriesExhausted) as raised:
        structured.complete_structured("What is 6 * 7?", AgentOutput)

    error = raised.value
    # instructor 1.17 counts max_retries as re-asks after the first attempt.
    assert error.attempts == 3
    assert len(scripted.calls) == 3
    assert error.what == "AgentOutput"
    assert isinstance(error.last_error, PydanticValidationError)
    assert error.last_completion.choices[0].message.content == reply
    assert error.usage == usage_times(3)


def test_max_retries_can_be_overridden_per_call(script: Script) -> None:
    scripted = script(NOT_JSON)

    with pytest.raises(RetriesExhausted) as raised:
        InstructorClient(make_llm(), max_retries=3).complete_structured("q", AgentOutput, max_retries=0)

    assert raised.value.attempts == 1
    assert len(scripted.calls) == 1


def test_structured_calls_get_network_retries_and_fallbacks(script: Script) -> None:
    scripted = script(connection_error(), connection_error(), VALID)
    structured = wrap_with_instructor(make_llm(num_retries=1, fallbacks=[FALLBACK]))

    output = structured.complete_structured("What is 6 * 7?", AgentOutput)

    assert scripted.models == [MODEL, MODEL, FALLBACK]
    assert output.raw["model"] == FALLBACK
    assert output.raw["attempts"] == 1  # one reply was validated; the failed calls never returned one


def test_api_failure_in_a_structured_call_raises_llm_error_not_retries_exhausted(script: Script) -> None:
    scripted = script(auth_error())

    with pytest.raises(LLMError) as raised:
        wrap_with_instructor(make_llm(), max_retries=3).complete_structured("q", AgentOutput)

    assert not isinstance(raised.value, RetriesExhausted)
    assert isinstance(raised.value.__cause__, type(auth_error()))
    assert len(scripted.calls) == 1  # neither our retries nor instructor's re-asks apply


def test_a_failed_structured_call_is_said_once_by_its_error_not_by_instructor_logs(
    script: Script, caplog: pytest.LogCaptureFixture
) -> None:
    # instructor logs "API call failed on attempt 1" and "Max retries exceeded" at ERROR for
    # every failed call: once per failed sample, saying what the raised error says.
    script(auth_error())

    with caplog.at_level(logging.INFO), pytest.raises(LLMError):
        wrap_with_instructor(make_llm(), max_retries=3).complete_structured("q", AgentOutput)

    assert [r.getMessage() for r in caplog.records if r.name.startswith("instructor")] == []


def test_instructor_logs_still_show_at_debug(script: Script, caplog: pytest.LogCaptureFixture) -> None:
    script(auth_error())

    with caplog.at_level(logging.DEBUG, logger="instructor"), pytest.raises(LLMError):
        wrap_with_instructor(make_llm(), max_retries=3).complete_structured("q", AgentOutput)

    said = [
        r for r in caplog.records if r.name.startswith("instructor") and "API call failed" in r.getMessage()
    ]
    assert [r.levelname for r in said] == ["DEBUG"]


def test_instructor_client_complete_delegates_to_the_wrapped_client() -> None:
    structured = wrap_with_instructor(make_llm(), max_retries=1)

    response = structured.complete("Say hello.", mock_response="Hello.")

    assert response.text == "Hello."
    assert response.usage == MOCK_USAGE
    assert isinstance(structured, LLMClientLike)
    assert structured.max_retries == 1
