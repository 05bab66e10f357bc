"""Every LiteLLMClient attempt passes its gate: retries, fallbacks and structured re-asks, 429s told first."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest
from pydantic import BaseModel

from ace_workers.providers import LiteLLMClient
from ace_workers.providers._lazy_imports import import_litellm
from ace_workers.providers.call_gate import Prompt
from tests.support.llms import FALLBACK, MOCK_USAGE, MODEL, ScriptedCompletion, auth_error

Script = Callable[..., ScriptedCompletion]


class RecordingGate:
    """A gate that lets every attempt through and records what it was asked and told."""

    def __init__(self, refuse: BaseException | None = None) -> None:
        self.events: list[tuple[str, Any]] = []
        self.refuse = refuse

    def before(self, model: str, prompt: Prompt, max_tokens: int | None) -> str:
        self.events.append(("before", model))
        if self.refuse is not None:
            raise self.refuse
        return model

    def after(self, ticket: Any, usage: Mapping[str, int] | None, cost: float | None) -> None:
        self.events.append(("after", (ticket, dict(usage) if usage is not None else None)))

    def rate_limited(self, ticket: Any, error: BaseException) -> None:
        self.events.append(("rate_limited", ticket))


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
