"""RRStep: the Recursive Reflector, which analyses a trace by writing code that a sandbox runs.

Each turn the LLM gets the Reflector's inputs, the sandbox API and every
earlier turn's code and output; it replies with a ```python block, which
runs in a fresh :class:`~ace_workers.rr.sandbox.Sandbox` process with the
trace as variables. The run ends when the code calls ``FINAL(reflection)``
with a dict that validates as :class:`~ace_workers.core.outputs.ReflectorOutput`;
an invalid one is shown to the LLM as the next turn's error. The turns are
recorded in ``ReflectorOutput.raw["rr_trace"]`` (see :mod:`ace_workers.rr.records`).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from pydantic import ValidationError

from ..core.context import ACEStepContext
from ..core.outputs import AgentOutput, ReflectorOutput
from ..counts import counted
from ..errors import RecursiveReflectorError
from ..observability.spans import traced_llm_call
from ..protocols import LLMClientLike, SkillbookLike
from ..roles.helpers import reflection_inputs
from ..steps.reflect import ReflectStep
from .config import RRConfig
from .prompts import RR_PROMPT, render_iterations
from .records import RR_TRACE_KEY, RRIteration, make_rr_trace
from .replies import extract_code, reply_cost, reply_model, reply_text, reply_usage
from .sandbox import Sandbox

__all__ = ["RRStep"]

logger = logging.getLogger(__name__)

NO_CODE_ERROR = "the reply holds no ```python code block; reply with exactly one"


class RRStep:
    """The Recursive Reflector: a drop-in ReflectorLike and a pipeline step.

    As a reflector (``reflect``) it fits wherever :class:`~ace_workers.roles.Reflector`
    does: ``ACE.from_roles(reflector=...)``, ``TraceAnalyser``,
    ``ACELiteLLM(llm, reflector=...)``, ``learning_tail``. As a step it
    provides ``reflection`` from ``trace`` and ``skillbook`` exactly as
    ReflectStep does (it is a ReflectStep around itself).

    Args:
        llm: Any LLMClientLike; only ``complete`` is used, its result's
            ``.text`` (or the str itself) read as the reply.
        config: Iterations, sandbox limits, prompt budgets.
        prompt_template: A format template with RR_PROMPT's placeholders.
        sandbox: The sandbox to run code in (default: one with ``config.limits``).
    """

    requires = ReflectStep.requires
    provides = ReflectStep.provides
    async_boundary = True
    max_workers = ReflectStep.max_workers

    def __init__(
        self,
        llm: LLMClientLike,
        config: RRConfig | None = None,
        *,
        prompt_template: str = RR_PROMPT,
        sandbox: Sandbox | None = None,
    ) -> None:
        self.llm = llm
        self.config = config or RRConfig()
        self.prompt_template = prompt_template
        self.sandbox = sandbox or Sandbox(self.config.limits, isolation=self.config.isolation)
        self._step = ReflectStep(self)

    def __repr__(self) -> str:
        return f"RRStep({self.llm!r}, max_iterations={self.config.max_iterations})"

    # -- StepProtocol ---------------------------------------------------------------------
    def __call__(self, ctx: ACEStepContext) -> ACEStepContext:
        """Provide ``ctx.reflection`` from ``ctx.trace``, as ReflectStep does."""
        return self._step(ctx)

    # -- ReflectorLike --------------------------------------------------------------------
    def build_prompt(
        self,
        question: str,
        agent_output: AgentOutput,
        skillbook: SkillbookLike,
        ground_truth: str | None = None,
        feedback: str | None = None,
        trace: object | None = None,
        iterations: list[RRIteration] | None = None,
    ) -> str:
        """The prompt of the turn after ``iterations``, for inspection and logging."""
        limits = self.sandbox.limits
        attempt = reflection_inputs(
            question, agent_output, skillbook, ground_truth, feedback, trace, self.config.max_trace_chars
        )
        return self.prompt_template.format(
            **attempt,
            timeout_s=limits.timeout_s,
            memory_mb=limits.memory_mb,
            max_observation_chars=self.config.max_observation_chars,
            max_iterations=self.config.max_iterations,
            iterations=render_iterations(iterations or [], self.config.max_observation_chars),
        )

    def reflect(
        self,
        question: str,
        agent_output: AgentOutput,
        skillbook: SkillbookLike,
        ground_truth: str | None = None,
        feedback: str | None = None,
        **kwargs: Any,
    ) -> ReflectorOutput:
        """Iterate LLM turn, sandbox run, check, until a valid FINAL reflection.

        A ``trace`` keyword (the raw record) is the code's ``trace`` variable
        and is previewed in the prompt; other keywords go to ``llm.complete``.

        Raises:
            RecursiveReflectorError: no valid FINAL within ``max_iterations``;
                it carries the iterations, the last error and ``rr_trace``.
            LLMError: the LLM call itself failed (from the client).
        """
        trace = kwargs.pop("trace", None)
        variables = _variables(question, agent_output, skillbook, ground_truth, feedback, trace)
        iterations: list[RRIteration] = []
        calls = _CallMetadata(self.llm)
        last_text = ""
        for number in range(1, self.config.max_iterations + 1):
            started = time.monotonic()
            prompt = self.build_prompt(
                question, agent_output, skillbook, ground_truth, feedback, trace, iterations
            )
            with traced_llm_call(self.llm, response_model="code", role="RRStep") as call:
                completion = self.llm.complete(prompt, **kwargs)
                call.record(completion)
            last_text = reply_text(completion)
            calls.add(completion)
            record, reflection = self._run_turn(number, last_text, variables)
            record["duration_s"] = time.monotonic() - started
            iterations.append(record)
            logger.debug(
                "rr iteration %d: final=%s killed=%s error=%s",
                number,
                record["final_called"],
                record["killed"],
                record["error"],
            )
            if reflection is not None:
                rr_trace = make_rr_trace(iterations, self.config.max_iterations, final_called=True)
                raw = {RR_TRACE_KEY: rr_trace, **calls.provider_metadata()}
                return reflection.model_copy(update={"raw": raw})
        last_error = iterations[-1]["error"] if iterations else None
        rr_trace = make_rr_trace(iterations, self.config.max_iterations, final_called=False)
        logger.warning(
            "recursive reflector gave up after %s: %s", counted(len(iterations), "iteration"), last_error
        )
        raise RecursiveReflectorError(len(iterations), last_error, rr_trace, last_text)

    def _run_turn(
        self, number: int, text: str, variables: dict[str, Any]
    ) -> tuple[RRIteration, ReflectorOutput | None]:
        """Run the reply's code; the turn's record, and the reflection if FINAL gave a valid one."""
        code = extract_code(text)
        if code is None:
            return _record(number, "", error=NO_CODE_ERROR), None
        result = self.sandbox.run(code, variables)
        record = _record(
            number,
            code,
            stdout=result.stdout,
            stderr=result.stderr,
            error=result.error,
            final_called=result.final_called,
            killed=result.killed,
        )
        if not result.final_called:
            return record, None
        try:
            return record, ReflectorOutput.model_validate(result.final_value)
        except ValidationError as exc:
            record["error"] = f"FINAL value is not a valid reflection: {_describe(exc)}"
            return record, None


class _CallMetadata:
    """The LLM calls of one run, summed as role outputs report them in ``raw`` (and metrics count them).

    The same keys the structured clients put there: the model that answered (the client's
    own ``model`` when no reply says), token usage, attempts (one per turn) and the cost,
    which stays unknown when any call was not priced.
    """

    def __init__(self, llm: object) -> None:
        client_model = getattr(llm, "model", None)
        self.model: str | None = client_model if isinstance(client_model, str) else None
        self.usage: dict[str, int] = {}
        self.attempts = 0
        self.costs: list[float | None] = []

    def add(self, completion: Any) -> None:
        """Count one turn's completion."""
        self.attempts += 1
        self.model = reply_model(completion) or self.model
        for key, value in reply_usage(completion).items():
            self.usage[key] = self.usage.get(key, 0) + value
        self.costs.append(reply_cost(completion))

    def provider_metadata(self) -> dict[str, Any]:
        """``model`` (when known), ``usage``, ``attempts`` and ``cost`` for the reflection's ``raw``."""
        priced = None not in self.costs
        metadata: dict[str, Any] = {
            "usage": self.usage,
            "attempts": self.attempts,
            "cost": sum(cost for cost in self.costs if cost is not None) if priced else None,
        }
        if self.model:
            metadata["model"] = self.model
        return metadata


def _variables(
    question: str,
    agent_output: AgentOutput,
    skillbook: SkillbookLike,
    ground_truth: str | None,
    feedback: str | None,
    trace: object | None,
) -> dict[str, Any]:
    """The sandbox globals: the trace and the Reflector's typed inputs."""
    fields: dict[str, Any] = {
        "question": question,
        "reasoning": agent_output.reasoning,
        "answer": agent_output.final_answer,
        "skill_ids": list(agent_output.skill_ids),
        "ground_truth": ground_truth or "",
        "feedback": feedback or "",
    }
    return {
        **fields,
        "trace": trace if trace is not None else dict(fields),
        "skillbook": skillbook.as_prompt(),
    }


def _record(
    number: int,
    code: str,
    *,
    stdout: str = "",
    stderr: str = "",
    error: str | None = None,
    final_called: bool = False,
    killed: str | None = None,
) -> RRIteration:
    return {
        "iteration": number,
        "code": code,
        "stdout": stdout,
        "stderr": stderr,
        "error": error,
        "final_called": final_called,
        "killed": killed,
        "duration_s": 0.0,
    }


def _describe(exc: ValidationError) -> str:
    """A validation error in one line per problem, without pydantic's URLs."""
    problems = [f"{'.'.join(str(p) for p in e['loc']) or 'value'}: {e['msg']}" for e in exc.errors()]
    return "; ".join(problems)
