"""from_model: "sim" is the simulated LLM, a model that cannot be called is refused at once, and
ACELiteLLM's learn() and ask() say a failure in one error, never quietly."""

from __future__ import annotations

import logging

import pytest

from ace_workers import ACELiteLLM, LangChain
from ace_workers.core import Sample, SimpleEnvironment
from ace_workers.core.environments import EnvironmentResult, TaskEnvironment
from ace_workers.core.outputs import AgentOutput
from ace_workers.errors import LearningFailed, LLMError, ModelUnavailableError
from ace_workers.runners.integration import roles_llm
from ace_workers.sim import SimulatedLLM, make_tasks
from tests.support.langchain_agents import replies, scripted
from tests.support.llms import MODEL, auth_error, install_scripted_completion, refuse_connections


def test_acelitellm_from_model_sim_is_the_simulated_llm_with_the_settings_defaults() -> None:
    ace = ACELiteLLM.from_model("sim")
    assert isinstance(ace.llm, SimulatedLLM)
    assert ace.llm.world.trust_threshold == 3  # WorkerSettings' ACE_SIM_TRUST_THRESHOLD default


def test_the_integration_runners_learn_on_the_simulated_llm_with_ace_model_sim() -> None:
    assert isinstance(roles_llm("sim", 2048), SimulatedLLM)  # LangChain, BrowserUse and ClaudeCode's
    runner = LangChain.from_model(scripted(*replies("no idea")), ace_model="sim")
    results = runner.run([make_tasks(1, topics=1)[0].question])  # a zorb puzzle, answered "no idea"
    assert all(result.ok for result in results)
    assert [skill.section for skill in runner.skillbook.skills()] == ["zorb"]


def test_from_model_refuses_a_model_litellm_does_not_know_before_any_call() -> None:
    with pytest.raises(ModelUnavailableError, match=r"^model 'nope' is not a model litellm knows"):
        ACELiteLLM.from_model("nope")


def test_from_model_names_the_missing_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ModelUnavailableError, match=r"^model 'gpt-4o-mini' needs OPENAI_API_KEY$"):
        ACELiteLLM.from_model("gpt-4o-mini")
    with pytest.raises(ModelUnavailableError, match="OPENAI_API_KEY"):
        LangChain.from_model(scripted("x"), ace_model="gpt-4o-mini")


class FailingOn(TaskEnvironment):
    """Evaluates like SimpleEnvironment, but raises for the questions it is given."""

    def __init__(self, *questions: str) -> None:
        self.questions = set(questions)

    def evaluate(self, sample: Sample, agent_output: AgentOutput) -> EnvironmentResult:  # type: ignore[override]
        if sample.question in self.questions:
            raise RuntimeError(f"cannot grade {sample.question!r}")
        return SimpleEnvironment().evaluate(sample, agent_output)


def test_learn_raises_learning_failed_when_every_sample_failed() -> None:
    samples = make_tasks(3)
    ace = ACELiteLLM(SimulatedLLM(), environment=FailingOn(*(s.question for s in samples)))

    with pytest.raises(LearningFailed) as raised:
        ace.learn(samples)

    assert raised.value.count == 3
    assert isinstance(raised.value.first_cause, RuntimeError)
    assert str(raised.value) == (
        f"all 3 samples failed; first error at EvaluateStep: "
        f"RuntimeError: cannot grade {samples[0].question!r}"
    )


def test_learn_from_traces_raises_learning_failed_when_the_model_fails_every_call() -> None:
    ace = ACELiteLLM(SimulatedLLM(failure_rate=1.0))
    with pytest.raises(LearningFailed, match=r"^all 2 samples failed; first error at ReflectStep: LLMError"):
        ace.learn_from_traces([{"question": "q", "answer": "a"}] * 2)


def test_some_failed_samples_are_one_warning_with_the_count(caplog: pytest.LogCaptureFixture) -> None:
    samples = make_tasks(4)
    ace = ACELiteLLM(SimulatedLLM(), environment=FailingOn(samples[1].question, samples[3].question))

    with caplog.at_level(logging.WARNING):
        results = ace.learn(samples)

    assert [result.ok for result in results] == [True, False, True, False]
    warnings = [record.getMessage() for record in caplog.records if record.levelno >= logging.WARNING]
    assert len(warnings) == 1
    assert warnings[0].startswith("2 of 4 samples failed; first error at EvaluateStep: RuntimeError")


def test_ask_raises_one_llm_error_naming_the_model_and_the_cause_and_prints_nothing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    refuse_connections(monkeypatch, "ask()")
    install_scripted_completion(monkeypatch, auth_error())  # the real litellm path, refused
    ace = ACELiteLLM.from_model(MODEL)

    with pytest.raises(LLMError) as raised:
        ace.ask("What is 6 * 7?")

    message = str(raised.value)
    assert message.startswith(f"ask() got no answer from {MODEL}: ")
    assert "AuthenticationError" in message
    assert "invalid api key" in message
    assert "\n" not in message
    # No chain of provider errors behind it to print as a traceback.
    assert raised.value.__cause__ is None
    assert raised.value.__suppress_context__
    assert capsys.readouterr().out == ""
