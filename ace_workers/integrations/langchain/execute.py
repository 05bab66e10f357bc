"""LangChainExecuteStep: run a LangChain runnable on an input with the skillbook in it."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from ...core.context import ACEStepContext
from ...core.prompt_budget import DEFAULT_PROMPT_BUDGET, PromptBudget
from ...extras import require_extra
from ...steps._checks import require_field
from ...traces.langchain.result import LangChainResult
from ...traces.skillbook_context import wrap_skillbook_context
from .inputs import inject_into_input, task_of
from .outputs import make_result

__all__ = ["LangChainExecuteStep", "with_callback"]


class LangChainExecuteStep:
    """Provide ``trace``: a :class:`LangChainResult` of invoking ``runnable`` on ``ctx.sample``.

    Any runnable works: a chain (``prompt | model``), a model, an
    AgentExecutor, a LangGraph graph. The skillbook's strategies, cut to
    ``prompt_budget`` by relevance to the task, go into the input (see
    :func:`~ace_workers.integrations.langchain.inputs.inject_into_input`). The
    run's model calls, tool calls and errors are recorded through a callback
    handler added to ``config``'s callbacks. A run that raises is recorded in
    the result, not raised: the learning tail learns from failures too.

    Raises:
        MissingExtraError: at construction, when the ``langchain`` extra is not installed.
        TypeError: at construction, when ``runnable`` has no ``invoke``; on an input with
            no place for the skillbook (a dict with neither ``input_key`` nor
            ``messages``, naming its keys), on every input, the skillbook empty or not.
    """

    # On the fleet it is served the version of the sample's label (distributed/worker/serving.py).
    serves_skillbook = True
    requires = frozenset({"sample", "skillbook"})
    provides = frozenset({"trace"})

    def __init__(
        self,
        runnable: Any,
        *,
        output_parser: Callable[[Any], str] | None = None,
        input_key: str = "input",
        config: Mapping[str, Any] | None = None,
        prompt_budget: PromptBudget | None = DEFAULT_PROMPT_BUDGET,
    ) -> None:
        require_extra("langchain", "LangChainExecuteStep")
        if not callable(getattr(runnable, "invoke", None)):
            raise TypeError(
                f"LangChainExecuteStep needs a LangChain Runnable (something with invoke), "
                f"got {type(runnable).__name__}"
            )
        self.runnable = runnable
        self.output_parser = output_parser
        self.input_key = input_key
        self.config = dict(config or {})
        self.prompt_budget = prompt_budget

    def __call__(self, ctx: ACEStepContext) -> ACEStepContext:
        sample = require_field(ctx.sample, "LangChainExecuteStep", "sample")
        skillbook = require_field(ctx.skillbook, "LangChainExecuteStep", "skillbook")
        task = task_of(sample, self.input_key)
        context = wrap_skillbook_context(skillbook, task, budget=self.prompt_budget)
        enhanced = inject_into_input(sample, context, self.input_key)
        return ctx.replace(trace=self.run(task, enhanced))

    def run(self, task: str, runnable_input: Any) -> LangChainResult:
        """Invoke the runnable on ``runnable_input`` (already holding the skillbook) and record the run."""
        from .recorder import RunRecorder

        recorder = RunRecorder()
        started = time.monotonic()
        output, error = None, None
        try:
            output = self.runnable.invoke(runnable_input, config=with_callback(self.config, recorder))
        except Exception as exc:  # the user's chain failed: that is what the Reflector learns from
            error = f"{type(exc).__name__}: {exc}"
        events = [event for run in recorder.finished for event in run.events]
        return make_result(
            task,
            output,
            error=error,
            events=events,
            duration_seconds=time.monotonic() - started,
            output_parser=self.output_parser,
        )

    def __repr__(self) -> str:
        return f"LangChainExecuteStep({type(self.runnable).__name__}, input_key={self.input_key!r})"


def with_callback(config: Mapping[str, Any], handler: Any) -> dict[str, Any]:
    """``config`` with ``handler`` added to its callbacks (a list, a callback manager, or none)."""
    callbacks = config.get("callbacks")
    if callbacks is None:
        merged: Any = [handler]
    elif isinstance(callbacks, (list, tuple)):
        merged = [*callbacks, handler]
    else:  # a BaseCallbackManager: add to a copy, the caller's stays as it was
        merged = callbacks.copy()
        merged.add_handler(handler, inherit=True)
    return {**config, "callbacks": merged}
