"""register_opik_litellm_callback: LiteLLM's OpikLogger, registered once, logs a real (mocked) call."""

from __future__ import annotations

import sys
import time

import pytest

from ace_workers.observability import register_opik_litellm_callback
from ace_workers.providers._lazy_imports import import_litellm
from ace_workers.runners import ACELiteLLM
from ace_workers.sim import SimulatedLLM
from tests.support.opik import NetworkGuard, OpikStub

PROJECT = "ace-opik-test"


def test_the_litellm_callback_is_registered_once(opik_env: OpikStub) -> None:
    import litellm
    from litellm.integrations.opik.opik import OpikLogger

    register_opik_litellm_callback(project_name=PROJECT)
    register_opik_litellm_callback(project_name=PROJECT)
    assert len([cb for cb in litellm.callbacks if isinstance(cb, OpikLogger)]) == 1


def test_acelitellm_with_opik_registers_the_litellm_callback(opik_env: OpikStub) -> None:
    import litellm
    from litellm.integrations.opik.opik import OpikLogger

    ACELiteLLM(SimulatedLLM(), opik=True, opik_project=PROJECT)
    (registered,) = [cb for cb in litellm.callbacks if isinstance(cb, OpikLogger)]
    assert registered.opik_project_name == PROJECT


def test_acelitellm_with_opik_registers_the_litellm_callback_when_litellm_loads(
    opik_env: OpikStub, monkeypatch: pytest.MonkeyPatch
) -> None:
    import litellm
    from litellm.integrations.opik.opik import OpikLogger

    monkeypatch.delitem(sys.modules, "litellm")  # as in a process that never imported it
    ACELiteLLM(SimulatedLLM(), opik=True, opik_project=PROJECT)
    assert "litellm" not in sys.modules  # a SimulatedLLM runner does not pay for importing litellm
    assert not [cb for cb in litellm.callbacks if isinstance(cb, OpikLogger)]

    monkeypatch.setitem(sys.modules, "litellm", litellm)
    import_litellm.cache_clear()  # the first LiteLLM call of the process loads it
    assert import_litellm() is litellm
    (registered,) = [cb for cb in litellm.callbacks if isinstance(cb, OpikLogger)]
    assert registered.opik_project_name == PROJECT


def test_from_model_with_opik_registers_the_litellm_callback(
    opik_env: OpikStub, monkeypatch: pytest.MonkeyPatch
) -> None:
    import litellm
    from litellm.integrations.opik.opik import OpikLogger

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")  # from_model checks the model's credentials
    ACELiteLLM.from_model("openai/gpt-4o-mini", opik=True, opik_project=PROJECT)
    (registered,) = [cb for cb in litellm.callbacks if isinstance(cb, OpikLogger)]
    assert registered.opik_project_name == PROJECT


@pytest.fixture
def litellm_call(opik_env: OpikStub) -> OpikStub:
    """One mocked litellm completion after registering the callback, flushed to the stub."""
    import litellm
    from opik.api_objects import opik_client

    assert register_opik_litellm_callback(project_name=PROJECT)
    response = litellm.completion(
        model="openai/gpt-4o-mini", mock_response="hi", messages=[{"role": "user", "content": "Say hi"}]
    )
    assert response.choices[0].message.content == "hi"
    # LiteLLM runs sync success callbacks on its own thread pool: wait for the span, then flush.
    client = opik_client.get_client_cached()
    for _ in range(100):
        client.flush()
        if opik_env.spans():
            break
        time.sleep(0.05)
    return opik_env


def test_a_litellm_call_sends_an_llm_span_with_the_messages(litellm_call: OpikStub) -> None:
    (span,) = litellm_call.spans()
    assert (span["type"], span["input"]) == ("llm", [{"role": "user", "content": "Say hi"}])


def test_a_litellm_call_sends_its_answer(litellm_call: OpikStub) -> None:
    (span,) = litellm_call.spans()
    assert span["output"]["choices"][0]["message"]["content"] == "hi"


def test_a_litellm_call_is_logged_to_the_project(litellm_call: OpikStub) -> None:
    (trace,) = litellm_call.traces()
    (span,) = litellm_call.spans()
    assert (trace["project_name"], span["project_name"], span["trace_id"]) == (PROJECT, PROJECT, trace["id"])


def test_a_litellm_call_reaches_only_the_stub(litellm_call: OpikStub, network_guard: NetworkGuard) -> None:
    assert network_guard.outside_loopback() == []
