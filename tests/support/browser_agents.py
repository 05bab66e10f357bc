"""browser-use agents offline: a scripted chat model, scripts of steps, and recorded runs built
through the library's own classes (needs browser-use)."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

# browser_use is imported on first use, not with this module: every xdist worker collects every
# test module, and loading the SDK there would cost each worker its import time.
if TYPE_CHECKING:
    from browser_use.agent.views import ActionResult, AgentHistory, AgentHistoryList, AgentOutput

ZORB_TASK = "Solve the zorb puzzle. Input: 1234"
SITE = "http://127.0.0.1:8000/zorb.html"


@functools.cache
def agent_output_with_actions() -> type[AgentOutput]:
    """The agent's output model, with the actions as a real Tools registry declares them."""
    from browser_use.agent.views import AgentOutput
    from browser_use.tools.service import Tools

    return AgentOutput.type_with_custom_actions(Tools().registry.create_action_model())


def step(
    output: dict[str, Any] | None,
    results: list[ActionResult],
    *,
    url: str = SITE,
    number: int = 1,
    task: str = ZORB_TASK,
) -> AgentHistory:
    """One step: the model's output (None: the step had none), what its actions returned, the page."""
    from browser_use.agent.views import AgentHistory, StepMetadata
    from browser_use.browser.views import BrowserStateHistory

    return AgentHistory(
        model_output=agent_output_with_actions().model_validate(output) if output is not None else None,
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
    from browser_use.agent.views import ActionResult, AgentHistoryList

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


# -- a scripted agent -------------------------------------------------------------------------

# Options of every agent in these tests: no screenshots sent to the (scripted) model and no
# judge call after the run (the script answers the agent's steps only).
AGENT_OPTIONS: dict[str, Any] = {"use_vision": False, "use_judge": False}


class ScriptedChatModel:
    """A ``browser_use.llm`` chat model that answers each call with the next scripted step.

    Each step is the JSON of the agent's output (thinking, goals, actions);
    it is validated into the ``output_format`` model the agent asks for, so a
    script the library would reject fails here as it would from a provider.
    """

    _verified_api_keys = True  # nothing to verify: no API key, no network
    model = "scripted"

    def __init__(self, steps: list[dict[str, Any]]) -> None:
        self.steps = list(steps)
        self.prompts: list[str] = []

    @property
    def provider(self) -> str:
        return "scripted"

    @property
    def name(self) -> str:
        return "scripted"

    @property
    def model_name(self) -> str:
        return self.model

    async def ainvoke(self, messages: list[Any], output_format: Any = None, **kwargs: Any) -> Any:
        from browser_use.llm.views import ChatInvokeCompletion

        self.prompts.append("\n".join(str(getattr(m, "text", m)) for m in messages))
        if not self.steps:
            raise AssertionError("the scripted chat model ran out of steps")
        step = self.steps.pop(0)
        completion = output_format.model_validate(step) if output_format is not None else str(step)
        return ChatInvokeCompletion(completion=completion, usage=None)


def navigate_then_give_up(url: str, answer: str = "no idea") -> list[dict[str, Any]]:
    """Open ``url``, find nothing, and finish reporting failure with ``answer``."""
    return [
        {
            "thinking": "The puzzle may be explained on the site.",
            "evaluation_previous_goal": "Starting.",
            "memory": "Nothing yet.",
            "next_goal": "Open the puzzle page.",
            "action": [{"navigate": {"url": url}}],
        },
        {
            "thinking": "The page has no rule for zorb puzzles.",
            "evaluation_previous_goal": "The page opened but explains nothing.",
            "memory": "Visited the puzzle page.",
            "next_goal": "Give up.",
            "action": [{"done": {"text": answer, "success": False}}],
        },
    ]
