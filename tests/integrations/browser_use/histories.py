"""Recorded browser-use runs built through the library's own classes (needs browser-use)."""

from __future__ import annotations

from typing import Any

from browser_use.agent.views import ActionResult, AgentHistory, AgentHistoryList, AgentOutput, StepMetadata
from browser_use.browser.views import BrowserStateHistory
from browser_use.tools.service import Tools

ZORB_TASK = "Solve the zorb puzzle. Input: 1234"
SITE = "http://127.0.0.1:8000/zorb.html"
# The agent's actions as a real Tools registry declares them.
AgentOutputWithActions = AgentOutput.type_with_custom_actions(Tools().registry.create_action_model())


def step(
    output: dict[str, Any] | None,
    results: list[ActionResult],
    *,
    url: str = SITE,
    number: int = 1,
    task: str = ZORB_TASK,
) -> AgentHistory:
    """One step: the model's output (None: the step had none), what its actions returned, the page."""
    return AgentHistory(
        model_output=AgentOutputWithActions.model_validate(output) if output is not None else None,
        result=results,
        state=BrowserStateHistory(url=url, title="Zorb puzzles", tabs=[], interacted_element=[None]),
        metadata=StepMetadata(
            step_start_time=100.0 + number, step_end_time=100.5 + number, step_number=number
        ),
        state_message=f"<user_request>\n{task}\n</user_request>\n\n<browser_state>...</browser_state>",
    )


def brain(thinking: str, next_goal: str, *actions: dict[str, Any]) -> dict[str, Any]:
    """The model's output of one step."""
    return {
        "thinking": thinking,
        "evaluation_previous_goal": "Went as planned.",
        "memory": "On the puzzle site.",
        "next_goal": next_goal,
        "action": list(actions),
    }


def failed_zorb_run(
    *, task: str = ZORB_TASK, extracted: str = "Zorb puzzles: no rule given"
) -> AgentHistoryList:
    """Navigate, click an element that is gone (an error), extract the page, give up."""
    return AgentHistoryList(
        history=[
            step(
                brain("Open the site.", "Open the puzzle page.", {"navigate": {"url": SITE}}),
                [
                    ActionResult(
                        extracted_content=f"Navigated to {SITE}", long_term_memory=f"Navigated to {SITE}"
                    )
                ],
                url="about:blank",
                number=1,
                task=task,
            ),
            step(
                brain("Click the rules link.", "Read the rules.", {"click": {"index": 7}}),
                [ActionResult(error="Element index 7 not available - page may have changed")],
                number=2,
                task=task,
            ),
            step(
                brain("Read the page instead.", "Extract the rule.", {"extract": {"query": "the zorb rule"}}),
                [ActionResult(extracted_content=extracted, include_extracted_content_only_once=True)],
                number=3,
                task=task,
            ),
            step(
                brain("No rule anywhere.", "Give up.", {"done": {"text": "no idea", "success": False}}),
                [ActionResult(is_done=True, success=False, extracted_content="no idea")],
                number=4,
                task=task,
            ),
        ]
    )
