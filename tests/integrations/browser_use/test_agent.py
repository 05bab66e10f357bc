"""A real browser-use Agent driving headless chromium on a local page, with a scripted chat model."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from ace_workers.core import Skillbook
from ace_workers.errors import UnknownOptionError
from ace_workers.integrations.browser_use import BrowserExecuteStep, BrowserResult, BrowserToTrace
from ace_workers.roles import Reflector, SkillManager
from ace_workers.runners.browser_use import BrowserUse
from ace_workers.sim import SimulatedLLM, make_tasks
from tests.support.browser_agents import AGENT_OPTIONS, ScriptedChatModel, navigate_then_give_up
from tests.support.skillbooks import context, skillbook_with_rule

ZORB_TASK = make_tasks(1, topics=1)[0].question  # a zorb puzzle; the scripted agent answers "no idea"


def run_step(step: BrowserExecuteStep, task: str, skillbook: Skillbook) -> BrowserResult:
    # The step is async; a runner awaits it for you.
    result = asyncio.run(step(context(task, skillbook))).trace
    assert isinstance(result, BrowserResult)
    return result


# -- the execute step, on chromium -----------------------------------------------------------


def test_the_agent_opens_the_page_and_the_result_records_each_step(site: str, browser_session: Any) -> None:
    llm = ScriptedChatModel(navigate_then_give_up(site))
    step = BrowserExecuteStep(llm, browser_session, **AGENT_OPTIONS)
    result = run_step(step, ZORB_TASK, Skillbook())
    assert (result.success, result.output, result.steps_count) == (False, "no idea", 2)
    assert result.chronological_steps[0]["actions"] == [
        {"name": "navigate", "params": {"url": site, "new_tab": False}}
    ]
    assert result.chronological_steps[1]["url"] == site  # the page the second step started on


def test_the_agent_sees_the_skillbook_before_the_task(site: str, browser_session: Any) -> None:
    llm = ScriptedChatModel(navigate_then_give_up(site))
    run_step(BrowserExecuteStep(llm, browser_session, **AGENT_OPTIONS), ZORB_TASK, skillbook_with_rule())
    prompt = llm.prompts[0]
    assert prompt.index("reverse the digits") < prompt.index(f"## Task\n{ZORB_TASK}")


def test_a_run_that_raises_is_recorded_not_raised() -> None:
    # Agent() itself refuses this option value, before any browser starts.
    step = BrowserExecuteStep(ScriptedChatModel([]), llm_screenshot_size=(1, 1), **AGENT_OPTIONS)
    result = run_step(step, ZORB_TASK, Skillbook())
    assert (result.success, result.steps_count) == (False, 0)
    assert result.error == (
        "the agent raised ValueError: llm_screenshot_size dimensions must be at least 100 pixels"
    )


def test_an_option_the_agent_does_not_take_fails_at_construction() -> None:
    with pytest.raises(UnknownOptionError, match="BrowserExecuteStep does not take 'use_visoin'"):
        BrowserExecuteStep(ScriptedChatModel([]), use_visoin=False)


# -- the runner ----------------------------------------------------------------------------------


def test_the_runner_learns_the_rule_from_a_failed_browser_task_and_uses_it_next_time(
    site: str, browser_session: Any, tmp_path: Path
) -> None:
    browser_llm = ScriptedChatModel(navigate_then_give_up(site) * 2)
    ace_llm = SimulatedLLM()
    runner = BrowserUse.from_model(browser_llm, ace_llm=ace_llm, browser=browser_session, **AGENT_OPTIONS)
    (result,) = runner.run([ZORB_TASK])
    assert result.ok
    assert [s.section for s in runner.skillbook.skills()] == ["zorb"]
    trace = result.output.trace
    assert trace["question"] == ZORB_TASK
    assert f'tool call navigate: {{"url": "{site}"' in trace["reasoning"]
    assert trace["feedback"] == "The browser-use run failed: the agent reported that it failed: no idea"

    runner.save(tmp_path / "browser.json")
    again = BrowserUse.from_roles(
        browser_llm=browser_llm,
        reflector=Reflector(ace_llm),
        skill_manager=SkillManager(ace_llm),
        skillbook_path=tmp_path / "browser.json",
        browser=browser_session,
        **AGENT_OPTIONS,
    )
    again.run([ZORB_TASK])
    assert "reverse the digits" in browser_llm.prompts[-1]


def test_from_model_with_ace_model_sim_learns_on_the_simulated_llm() -> None:
    # No browser starts: Agent() refuses this option value, and the run's error is learned from.
    runner = BrowserUse.from_model(ScriptedChatModel([]), ace_model="sim", llm_screenshot_size=(1, 1))
    (result,) = runner.run([ZORB_TASK])
    assert result.ok
    assert [s.section for s in runner.skillbook.skills()] == ["zorb"]


def test_the_runner_refuses_an_option_neither_the_agent_nor_the_tail_takes() -> None:
    llm = SimulatedLLM()
    with pytest.raises(UnknownOptionError, match=r"BrowserUse\.from_roles does not take 'modle'"):
        BrowserUse.from_roles(
            browser_llm=ScriptedChatModel([]),
            reflector=Reflector(llm),
            skill_manager=SkillManager(llm),
            modle="x",
        )


def test_the_runner_composes_execute_convert_and_the_learning_tail() -> None:
    llm = SimulatedLLM()
    steps = BrowserUse.build_steps(
        browser_llm=ScriptedChatModel([]),
        reflector=Reflector(llm),
        skill_manager=SkillManager(llm),
        skillbook=Skillbook(),
        max_steps=7,
        use_vision=False,
        dedup_interval=5,
    )
    names = [type(step).__name__ for step in steps]
    assert names[:2] == ["BrowserExecuteStep", "BrowserToTrace"]
    assert names[2] == "ReflectStep"
    assert (steps[0].max_steps, steps[0].agent_kwargs["use_vision"]) == (7, False)
    assert isinstance(steps[1], BrowserToTrace)
