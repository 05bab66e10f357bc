"""The simulated LLM's failure kinds, and the worker settings that turn them on in worker processes."""

from __future__ import annotations

import pytest

from ace_workers.core.outputs import ReflectorOutput
from ace_workers.distributed.errors import InvalidSettingError
from ace_workers.distributed.settings import WorkerSettings
from ace_workers.distributed.worker.runtime import build_llm
from ace_workers.errors import LLMError
from ace_workers.sim import SimulatedLLM

REFLECTOR_PROMPT = "# Reflector\n## Question\nq\n"


def test_rate_limit_failures_are_llm_errors_saying_429() -> None:
    llm = SimulatedLLM(failure_rate=1.0, failure="rate_limit")
    with pytest.raises(LLMError, match="429 Too Many Requests") as info:
        llm.complete_structured(REFLECTOR_PROMPT, ReflectorOutput)
    assert "ReflectorOutput" in str(info.value)
    with pytest.raises(LLMError, match="429"):
        llm.complete("hello")


def test_the_default_failure_is_a_generic_provider_error() -> None:
    with pytest.raises(LLMError, match="simulated provider failure"):
        SimulatedLLM(failure_rate=1.0).complete("hello")


def test_half_the_calls_fail_with_a_seeded_rate() -> None:
    llm = SimulatedLLM(failure_rate=0.5, failure="rate_limit", seed=7)
    failed = 0
    for _ in range(400):
        try:
            llm.complete("hello")
        except LLMError:
            failed += 1
    assert 160 < failed < 240


def test_an_unknown_failure_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="rate_limit"):
        SimulatedLLM(failure="teapot")


def test_workers_build_the_simulator_with_the_failure_settings() -> None:
    settings = WorkerSettings.from_env({"ACE_SIM_FAILURE_RATE": "0.5", "ACE_SIM_FAILURE": "error"})
    llm = build_llm("sim", settings)
    assert isinstance(llm, SimulatedLLM)
    assert (llm.failure_rate, llm.failure) == (0.5, "error")
    assert WorkerSettings().sim_failure_rate == 0
    assert WorkerSettings().sim_failure == "rate_limit"


@pytest.mark.parametrize(
    ("variable", "value"),
    [("ACE_SIM_FAILURE_RATE", "1.5"), ("ACE_SIM_FAILURE_RATE", "-0.1"), ("ACE_SIM_FAILURE", "x")],
)
def test_bad_failure_settings_name_their_variable(variable: str, value: str) -> None:
    with pytest.raises(InvalidSettingError) as info:
        WorkerSettings.from_env({variable: value})
    assert info.value.variable == variable
