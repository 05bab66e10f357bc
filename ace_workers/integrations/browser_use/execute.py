"""BrowserExecuteStep: run a browser-use ``Agent`` on a task with the skillbook in its prompt."""

from __future__ import annotations

import importlib
import inspect
import logging
import time
from typing import Any

from ...core.context import ACEStepContext
from ...core.prompt_budget import DEFAULT_PROMPT_BUDGET, PromptBudget
from ...errors import UnknownOptionError
from ...extras import require_extra
from ...steps._checks import require_field
from ...traces.browser_use.history import history_steps, run_outcome, steps_cited_skill_ids
from ...traces.browser_use.result import BrowserResult
from ...traces.skillbook_context import inject_skillbook_context
from ..tasks import task_text

__all__ = ["BrowserExecuteStep", "DEFAULT_MAX_STEPS"]

logger = logging.getLogger(__name__)

# A bound on the cost of one task; browser-use's own default (Agent.run) is 500 steps.
DEFAULT_MAX_STEPS = 100
# Agent parameters this step sets itself, so they are not agent_kwargs.
OWN_PARAMETERS = frozenset({"self", "task", "llm", "browser", "kwargs"})


class BrowserExecuteStep:
    """Provide ``trace``: a :class:`BrowserResult` of a browser-use ``Agent`` run on ``ctx.sample``.

    The task (a string, or an object with a ``question``) goes to the agent
    with the skillbook's strategies before it, cut to ``prompt_budget`` by
    relevance to the task. The agent drives ``browser`` (a browser-use
    ``BrowserSession``; None: the agent starts its own) with ``browser_llm``
    (a ``browser_use.llm`` chat model) for at most ``max_steps`` steps;
    ``agent_kwargs`` go to ``browser_use.Agent`` as they are. A run that
    raises, stops early or reports failure is recorded in the result, not
    raised: the learning tail learns from failures too.

    The agent's own SIGINT handler (it pauses the run and waits for a key) is
    off unless ``enable_signal_handler=True`` is given: the process running
    the pipeline owns its signals. Runs sharing one ``browser`` never overlap.

    Raises:
        MissingExtraError: at construction, when browser-use is not installed.
        UnknownOptionError: at construction, an ``agent_kwargs`` name ``Agent`` does not take.
    """

    # On the fleet it is served the version of the sample's label (distributed/worker/serving.py).
    serves_skillbook = True
    requires = frozenset({"sample", "skillbook"})
    provides = frozenset({"trace"})

    def __init__(
        self,
        browser_llm: Any,
        browser: Any = None,
        *,
        prompt_budget: PromptBudget | None = DEFAULT_PROMPT_BUDGET,
        max_steps: int = DEFAULT_MAX_STEPS,
        **agent_kwargs: Any,
    ) -> None:
        require_extra("browser-use", "BrowserExecuteStep")
        if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
            raise ValueError(f"BrowserExecuteStep: max_steps must be an int of at least 1, got {max_steps!r}")
        check_agent_options(agent_kwargs, "BrowserExecuteStep")
        self.browser_llm = browser_llm
        self.browser = browser
        self.prompt_budget = prompt_budget
        self.max_steps = max_steps
        self.agent_kwargs = {"enable_signal_handler": False, **agent_kwargs}
        # One browser session drives one agent at a time (the engine's lock for exclusive steps).
        self.exclusive = browser is not None

    async def __call__(self, ctx: ACEStepContext) -> ACEStepContext:
        task = task_text(require_field(ctx.sample, "BrowserExecuteStep", "sample"), "BrowserExecuteStep")
        skillbook = require_field(ctx.skillbook, "BrowserExecuteStep", "skillbook")
        prompt = inject_skillbook_context(task, skillbook, budget=self.prompt_budget)
        started = time.monotonic()
        try:
            history = await self.run_agent(prompt)
        except Exception as exc:  # recorded in the trace: a crashed run is something to learn from
            logger.warning("browser-use agent raised on task %.60r: %s: %s", task, type(exc).__name__, exc)
            return ctx.replace(
                trace=BrowserResult(
                    task=task,
                    success=False,
                    output="",
                    error=f"the agent raised {type(exc).__name__}: {exc}",
                    duration_seconds=time.monotonic() - started,
                )
            )
        return ctx.replace(trace=self.to_result(task, history, time.monotonic() - started))

    async def run_agent(self, prompt: str) -> Any:
        """One ``browser_use.Agent`` run on ``prompt``; its ``AgentHistoryList``."""
        session = {"browser_session": self.browser} if self.browser is not None else {}
        agent = _agent_class()(task=prompt, llm=self.browser_llm, **session, **self.agent_kwargs)
        return await agent.run(max_steps=self.max_steps)

    def to_result(self, task: str, history: Any, duration_seconds: float) -> BrowserResult:
        """The result of one run: its steps in order, its ``done`` text, and what went wrong if anything."""
        steps = history_steps(history)
        success, output, error = run_outcome(steps)
        return BrowserResult(
            task=task,
            success=success,
            output=output,
            error=error,
            steps_count=len(steps),
            duration_seconds=duration_seconds,
            cited_skill_ids=steps_cited_skill_ids(steps),
            chronological_steps=steps,
            raw_history=history,
        )

    def __repr__(self) -> str:
        return f"BrowserExecuteStep(browser_llm={self.browser_llm!r}, max_steps={self.max_steps})"


def agent_options() -> list[str]:
    """The keyword arguments ``browser_use.Agent`` takes besides those the step sets (needs browser-use)."""
    parameters = inspect.signature(_agent_class().__init__).parameters
    return [name for name in parameters if name not in OWN_PARAMETERS]


def check_agent_options(options: dict[str, Any], where: str) -> None:
    """Refuse, naming them, options ``browser_use.Agent`` does not take (it would swallow them silently).

    Raises:
        UnknownOptionError: some option is not an ``Agent`` parameter.
    """
    accepted = agent_options()
    unknown = sorted(name for name in options if name not in accepted)
    if unknown:
        raise UnknownOptionError(where, unknown, accepted)


def _agent_class() -> Any:
    # Imported by name, so the library is Any at this boundary and type checking never needs it.
    return importlib.import_module("browser_use").Agent
