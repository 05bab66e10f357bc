"""Every LiteLLMClient attempt passes its gate: retries, fallbacks and structured re-asks, 429s told first."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel

from ace_workers.providers import LiteLLMClient
from ace_workers.providers._lazy_imports import import_litellm
from tests.support.gates import RecordingGate
from tests.support.llms import FALLBACK, MOCK_USAGE, MODEL, ScriptedCompletion, auth_error

Script = Callable[..., ScriptedCompletion]


class Answer(BaseModel):
    answer: str


def rate_limit_error() -> Exception:
    litellm = import_litellm()
    error: Exception = litellm.RateLimitError(message="slow down", llm_provider="openai", model="gpt-4o-mini")
    return error


def client_with(gate: RecordingGate, **options: Any) -> LiteLLMClient:
    return LiteLLMClient(MODEL, api_key="sk-test", retry_wait_seconds=0.0, gate=gate, **options)


def test_a_429_is_told_to_the_gate_before_the_retry_passes_it_again(script: Script) -> None:
    script(rate_limit_error(), "Fine.")
    gate = RecordingGate()
    assert client_with(gate).complete("hi").text == "Fine."
    assert gate.events == [
        ("before", MODEL),
        ("rate_limited", MODEL),
        ("before", MODEL),
        ("after", (MODEL, MOCK_USAGE)),
    ]


def test_a_fallback_model_passes_the_gate_under_its_own_name(script: Script) -> None:
    script(auth_error(), "From the fallback.")
    gate = RecordingGate()
    client_with(gate, fallbacks=[FALLBACK]).complete("hi")
    assert gate.events == [
        ("before", MODEL),
        ("after", (MODEL, None)),  # failed: its reservation is released
        ("before", FALLBACK),
        ("after", (FALLBACK, MOCK_USAGE)),
    ]


def test_each_structured_re_ask_passes_the_gate(script: Script) -> None:
    script("not json", '{"answer": "42"}')
    gate = RecordingGate()
    assert client_with(gate).complete_structured("hi", Answer).answer == "42"
    assert [event for event, _ in gate.events] == ["before", "after", "before", "after"]


def test_a_gate_that_refuses_stops_the_call_before_the_provider(script: Script) -> None:
    scripted = script("never sent")

    class Refused(Exception):
        pass

    gate = RecordingGate(refuse=Refused("budget spent"))
    with pytest.raises(Refused):
        client_with(gate).complete_structured("hi", Answer)
    assert scripted.calls == []
