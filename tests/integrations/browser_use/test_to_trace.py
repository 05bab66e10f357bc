"""BrowserToTrace on recorded runs built through browser-use's own classes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import BaseModel

from ace_workers.core import ACEStepContext
from ace_workers.errors import EmptySessionError
from ace_workers.integrations.browser_use import (
    BrowserResult,
    BrowserToTrace,
    browser_history_to_trace,
)
from ace_workers.traces.skillbook_context import inject_skillbook_context
from tests.support.browser_agents import SITE, ZORB_TASK, brain, failed_zorb_run, step
from tests.support.skillbooks import skillbook_with_rule


def convert(trace: object) -> dict:  # type: ignore[type-arg]
    return BrowserToTrace()(ACEStepContext(trace=trace)).trace  # type: ignore[no-any-return]


def test_the_trace_holds_the_task_the_steps_in_order_and_the_answer() -> None:
    trace = convert(failed_zorb_run())
    assert (trace["question"], trace["answer"], trace["steps"]) == (ZORB_TASK, "no idea", 4)
    order = [
        "thinking: step 1: Open the site.",
        "step 1 on about:blank: evaluation of the previous goal: Went as planned.",
        f'tool call navigate: {{"url": "{SITE}"',
        f"navigate result: Navigated to {SITE}",
        'tool call click: {"index": 7}',
        "extract result: Zorb puzzles: no rule given",
        "next goal: Give up.",
        'tool call done: {"text": "no idea", "success": false',
        "done result: no idea",
    ]
    positions = [trace["reasoning"].index(text) for text in order]
    assert positions == sorted(positions)


def test_an_action_that_errored_is_marked_and_listed_in_the_errors() -> None:
    trace = convert(failed_zorb_run())
    assert "click result (error): Element index 7 not available" in trace["reasoning"]
    assert trace["errors"][0] == "click failed: Element index 7 not available - page may have changed"


def test_a_run_that_reported_failure_says_so_in_the_feedback() -> None:
    trace = convert(failed_zorb_run())
    assert (trace["success"], trace["feedback"]) == (
        False,
        "The browser-use run failed: the agent reported that it failed: no idea",
    )


def test_a_successful_run_gives_its_done_text_and_a_success_feedback() -> None:
    from browser_use.agent.views import ActionResult, AgentHistoryList

    history = AgentHistoryList(
        history=[
            step(
                brain("Per [zorb-00001] reverse it.", "Answer.", {"done": {"text": "4321", "success": True}}),
                [ActionResult(is_done=True, success=True, extracted_content="4321")],
            )
        ]
    )
    trace = convert(history)
    assert (trace["answer"], trace["feedback"], trace["success"]) == (
        "4321",
        "The browser-use agent finished the task",
        True,
    )


def test_skill_ids_cited_in_the_models_thinking_are_in_the_trace() -> None:
    from browser_use.agent.views import ActionResult, AgentHistoryList

    history = AgentHistoryList(
        history=[
            step(
                brain("Per [zorb-00001] reverse it.", "Answer.", {"done": {"text": "4321", "success": True}}),
                [ActionResult(is_done=True, success=True, extracted_content="4321")],
            )
        ]
    )
    assert convert(history)["skill_ids"] == ["zorb-00001"]


def test_a_huge_extracted_content_is_cut_with_a_note_so_the_trace_stays_small() -> None:
    trace = convert(failed_zorb_run(extracted="zorb " * 100_000))
    assert "characters cut from this output" in trace["reasoning"]
    assert len(json.dumps(trace)) < 20_000


def test_a_run_stopped_before_done_failed_with_its_last_error() -> None:
    from browser_use.agent.views import ActionResult

    # What Agent.run appends when max_steps runs out: a step with no model output, only an error.
    history = failed_zorb_run()
    history.history[-1] = step(
        None, [ActionResult(error="Failed to complete task in maximum steps", include_in_memory=True)], url=""
    )
    trace = convert(history)
    assert trace["feedback"] == (
        "The browser-use run failed: the agent stopped before finishing the task: "
        "Failed to complete task in maximum steps"
    )
    assert "agent result (error): Failed to complete task in maximum steps" in trace["reasoning"]


def test_an_empty_history_is_a_clear_error() -> None:
    from browser_use.agent.views import AgentHistoryList

    with pytest.raises(
        EmptySessionError, match="browser-use run: the session holds no user or assistant message"
    ):
        convert(AgentHistoryList(history=[]))


def test_the_task_recorded_in_the_run_is_found_without_the_skillbook_context_before_it() -> None:
    prompt = inject_skillbook_context(ZORB_TASK, skillbook_with_rule())
    assert convert(failed_zorb_run(task=prompt))["question"] == ZORB_TASK


def test_a_given_task_wins_over_the_recorded_one() -> None:
    assert browser_history_to_trace(failed_zorb_run(), task="another task")["question"] == "another task"


def test_the_saved_form_with_unknown_and_missing_fields_still_converts() -> None:
    saved = failed_zorb_run().model_dump()  # what AgentHistoryList.save_to_file writes
    saved["schema_version"] = 99
    first = saved["history"][0]
    first["state"]["new_field"] = {"x": 1}
    first["model_output"]["confidence"] = 0.3
    first["result"][0]["verdict_of_the_future"] = "fine"
    del saved["history"][1]["state"]  # an older or newer release may leave a field out
    trace = browser_history_to_trace(saved)
    assert (trace["question"], trace["answer"], trace["steps"]) == (ZORB_TASK, "no idea", 4)
    assert "step 2: evaluation of the previous goal" in trace["reasoning"]


def test_a_result_of_a_run_that_raised_still_gives_a_trace_with_its_error() -> None:
    result = BrowserResult(task=ZORB_TASK, success=False, output="", error="the agent raised X: y")
    trace = convert(result)
    assert (trace["question"], trace["errors"]) == (ZORB_TASK, ["the agent raised X: y"])
    assert trace["feedback"] == "The browser-use run failed: the agent raised X: y"


def test_anything_else_on_the_trace_is_refused_naming_what_it_takes() -> None:
    with pytest.raises(
        TypeError,
        match=r"needs ctx\.trace to be a BrowserResult, a browser-use AgentHistoryList or its saved JSON "
        r"\(an object with a 'history' list\), got dict",
    ):
        convert({"question": "q"})


def test_a_history_of_a_structured_output_model_is_still_recognised() -> None:
    from browser_use.agent.views import AgentHistoryList

    class Answer(BaseModel):
        value: str

    # AgentHistoryList[Answer] is a class of its own, named "AgentHistoryList[Answer]".
    history = AgentHistoryList[Answer](history=failed_zorb_run().history)
    assert convert(history)["answer"] == "no idea"


def test_a_saved_history_converts_as_the_live_one_does(tmp_path: Path) -> None:
    failed_zorb_run().save_to_file(tmp_path / "run.json")
    saved = json.loads((tmp_path / "run.json").read_text())
    assert convert(saved) == convert(failed_zorb_run())
