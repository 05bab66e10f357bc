"""Runners refuse, when built, options that would do nothing (a typo, or a feature not here yet)."""

from __future__ import annotations

import pytest

from ace_workers import ACELiteLLM
from ace_workers.errors import UnknownOptionError
from ace_workers.roles import Agent, Reflector, SkillManager
from ace_workers.runners import ACE, TraceAnalyser
from ace_workers.sim import SimulatedLLM


def test_opik_is_refused_when_acelitellm_is_built_saying_it_is_not_available_yet() -> None:
    with pytest.raises(UnknownOptionError, match="opik is not available yet"):
        ACELiteLLM(SimulatedLLM(), opik=True)


def test_from_model_refuses_opik_before_any_learning() -> None:
    with pytest.raises(UnknownOptionError, match="'opik'"):
        ACELiteLLM.from_model("openai/gpt-4o-mini", opik=True)


def test_a_misspelled_option_is_named_with_the_options_that_exist() -> None:
    with pytest.raises(UnknownOptionError) as raised:
        ACELiteLLM(SimulatedLLM(), dedup_intervall=5)
    assert raised.value.names == ["dedup_intervall"]
    assert "dedup_interval" in raised.value.accepted


def test_ace_from_roles_refuses_an_unknown_option() -> None:
    llm = SimulatedLLM()
    with pytest.raises(UnknownOptionError, match=r"ACE\.from_roles does not take 'opik'"):
        ACE.from_roles(agent=Agent(llm), reflector=Reflector(llm), skill_manager=SkillManager(llm), opik=True)


def test_trace_analyser_from_roles_refuses_an_unknown_option() -> None:
    llm = SimulatedLLM()
    with pytest.raises(UnknownOptionError, match=r"TraceAnalyser\.from_roles does not take 'verbose'"):
        TraceAnalyser.from_roles(reflector=Reflector(llm), skill_manager=SkillManager(llm), verbose=True)


def test_options_the_learning_tail_takes_are_accepted() -> None:
    ace = ACELiteLLM(SimulatedLLM(), dedup_interval=5, checkpoint_interval=3, extra_steps=[])
    assert ace.runner_options == {"dedup_interval": 5, "checkpoint_interval": 3, "extra_steps": []}
