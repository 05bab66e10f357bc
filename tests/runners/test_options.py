"""Runners refuse, when built, options that would do nothing (a typo, or an option another runner takes)."""

from __future__ import annotations

import pytest

from ace_workers import ACELiteLLM
from ace_workers.errors import UnknownOptionError
from ace_workers.roles import Agent, Reflector, SkillManager
from ace_workers.runners import ACE, TraceAnalyser
from ace_workers.sim import SimulatedLLM


def test_acelitellm_takes_the_opik_options_without_tracing_when_opik_is_off() -> None:
    ace = ACELiteLLM(SimulatedLLM(), opik=False, opik_project="p", opik_tags=["t"])
    assert ace.flush_traces() is True


def test_from_model_takes_the_opik_options_without_tracing_when_opik_is_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")  # from_model checks the model's credentials
    ace = ACELiteLLM.from_model("openai/gpt-4o-mini", opik=False, opik_project="p")
    assert ace.flush_traces() is True


def test_acelitellm_with_opik_builds_with_opik_disabled(monkeypatch: pytest.MonkeyPatch) -> None:
    # What opik=True sends is tested against a stub Opik server in tests/observability/opik_tracing.
    monkeypatch.setenv("OPIK_DISABLED", "true")
    ace = ACELiteLLM(SimulatedLLM(), opik=True)
    assert ace.runner_options == {}


def test_a_misspelled_option_is_named_with_the_options_that_exist() -> None:
    with pytest.raises(UnknownOptionError) as raised:
        ACELiteLLM(SimulatedLLM(), dedup_intervall=5)
    assert raised.value.names == ["dedup_intervall"]
    assert "dedup_interval" in raised.value.accepted


def test_ace_from_roles_refuses_opik() -> None:
    llm = SimulatedLLM()
    with pytest.raises(UnknownOptionError, match=r"ACE\.from_roles does not take 'opik'"):
        ACE.from_roles(agent=Agent(llm), reflector=Reflector(llm), skill_manager=SkillManager(llm), opik=True)


def test_refusing_opik_points_at_opik_step_through_extra_steps() -> None:
    llm = SimulatedLLM()
    with pytest.raises(UnknownOptionError, match=r"OpikStep\(project_name=\.\.\.\).*extra_steps"):
        ACE.from_roles(agent=Agent(llm), reflector=Reflector(llm), skill_manager=SkillManager(llm), opik=True)


def test_trace_analyser_from_roles_refuses_opik_pointing_at_opik_step() -> None:
    llm = SimulatedLLM()
    with pytest.raises(UnknownOptionError, match="OpikStep"):
        TraceAnalyser.from_roles(reflector=Reflector(llm), skill_manager=SkillManager(llm), opik=True)


def test_trace_analyser_from_roles_refuses_an_unknown_option() -> None:
    llm = SimulatedLLM()
    with pytest.raises(UnknownOptionError, match=r"TraceAnalyser\.from_roles does not take 'verbose'"):
        TraceAnalyser.from_roles(reflector=Reflector(llm), skill_manager=SkillManager(llm), verbose=True)


def test_options_the_learning_tail_takes_are_accepted() -> None:
    ace = ACELiteLLM(SimulatedLLM(), dedup_interval=5, checkpoint_interval=3, extra_steps=[])
    assert ace.runner_options == {"dedup_interval": 5, "checkpoint_interval": 3, "extra_steps": []}
