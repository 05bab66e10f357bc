"""ACELiteLLM: one object to ask questions and learn, backed by one LLM client."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pipeline import Pipeline, SampleResult

from ..core.context import ACEStepContext, SkillbookView
from ..core.environments import Sample, TaskEnvironment
from ..core.outputs import AgentOutput
from ..core.skillbook import Skillbook
from ..counts import counted
from ..distributed.llms import model_client
from ..errors import LearningFailed, LLMError, one_line
from ..observability.opik import register_opik_litellm_callback
from ..observability.spans import client_model
from ..protocols import AgentLike, LLMClientLike, ReflectorLike, SkillManagerLike
from ..providers._lazy_imports import when_litellm_loads
from ..roles import Agent, Reflector, SkillManager
from ..steps import OpikStep, check_tail_options, learning_tail
from .ace import ACE
from .trace_analyser import TraceAnalyser

if TYPE_CHECKING:
    from ..rr.opik import RROpikStep

__all__ = ["ACELiteLLM", "check_learning"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Interaction:
    question: str
    context: str
    output: AgentOutput


class ACELiteLLM:
    """Ask, learn from samples, learn from traces, learn from feedback; save and load.

    Wraps an :class:`ACE` runner and a :class:`TraceAnalyser`, built on first
    use and rebuilt after :meth:`load`, so every step always holds the current
    skillbook.

    ``opik=True`` traces to Opik project ``opik_project``: one trace per
    sample (an :class:`~ace_workers.steps.OpikStep`, plus an ``RROpikStep``
    that logs the Recursive Reflector's iterations when it is the reflector),
    and every LiteLLM call through LiteLLM's Opik callback (registered when ace_workers
    first loads litellm, so a client that is not a LiteLLM one never pays its import). It fails here,
    not silently later: ImportError without the ``opik`` extra, RuntimeError
    when the client cannot log. ``OPIK_DISABLED=true`` still switches it off.
    """

    def __init__(
        self,
        llm: LLMClientLike,
        *,
        skillbook: Skillbook | None = None,
        environment: TaskEnvironment | None = None,
        agent: AgentLike | None = None,
        reflector: ReflectorLike | None = None,
        skill_manager: SkillManagerLike | None = None,
        opik: bool = False,
        opik_project: str = "ace-framework",
        opik_tags: Sequence[str] | None = None,
        **runner_options: Any,
    ) -> None:
        # Checked now, not at the first learn(): they go to both runners' learning tails.
        check_tail_options(runner_options, "ACELiteLLM", also=["extra_steps"])
        self.llm = llm
        self.agent: AgentLike = agent or Agent(llm)
        self.reflector: ReflectorLike = reflector or Reflector(llm)
        self.skill_manager: SkillManagerLike = skill_manager or SkillManager(llm)
        self.environment = environment
        self.runner_options = runner_options
        self._skillbook = skillbook if skillbook is not None else Skillbook()
        self._ace: ACE | None = None
        self._ace_environment: TaskEnvironment | None = None
        self._analyser: TraceAnalyser | None = None
        self._last: _Interaction | None = None
        self._opik_steps: list[OpikStep | RROpikStep] = _opik_steps(opik_project, opik_tags) if opik else []

    @classmethod
    def from_model(
        cls,
        model: str = "gpt-4o-mini",
        *,
        max_tokens: int = 2048,
        temperature: float = 0.0,
        opik: bool = False,
        opik_project: str = "ace-framework",
        opik_tags: Sequence[str] | None = None,
        **kwargs: Any,
    ) -> ACELiteLLM:
        """Build on ``model``: "sim" (the simulated LLM, offline) or a litellm model string, with
        instructor for validated structured output.

        Raises:
            ModelUnavailableError: litellm knows no provider for ``model``, or its credentials
                (e.g. OPENAI_API_KEY) are not set; checked now, before any call.
        """
        client = model_client(model, max_tokens=max_tokens, temperature=temperature)
        return cls(client, opik=opik, opik_project=opik_project, opik_tags=opik_tags, **kwargs)

    @property
    def skillbook(self) -> Skillbook:
        """The skillbook every question and every learning run uses."""
        return self._skillbook

    # -- answering ---------------------------------------------------------------------
    def ask(self, question: str, context: str = "") -> str:
        """Answer with the current skillbook (no learning); remembered for learn_from_feedback.

        Raises:
            LLMError: the model gave no answer; the message names the model and the cause, in one line.
        """
        try:
            output = self.agent.generate(
                question=question, context=context, skillbook=SkillbookView(self._skillbook)
            )
        except LLMError as error:
            # One error, not its chain: the provider's errors below it (litellm's, the SDK's,
            # httpx's) would print a traceback of a hundred lines that says no more than this.
            logger.debug("ask() failed", exc_info=error)
            raise LLMError(f"ask() got no answer from {client_model(self.llm)}: {one_line(error)}") from None
        self._last = _Interaction(question, context, output)
        return output.final_answer

    @property
    def last_output(self) -> AgentOutput | None:
        """The whole output of the last :meth:`ask` (reasoning, cited skills), or None before one."""
        return None if self._last is None else self._last.output

    # -- learning ------------------------------------------------------------------------
    def learn(
        self,
        samples: Iterable[Sample],
        environment: TaskEnvironment | None = None,
        epochs: int = 1,
        *,
        wait: bool = True,
        workers: int = 1,
    ) -> list[SampleResult[ACEStepContext]]:
        """Run the ACE loop over ``samples`` (answer, evaluate, reflect, update).

        Raises:
            LearningFailed: every sample failed (its count and the first cause attached); when
                only some failed, one warning says how many, and their results hold the errors.
        """
        results = self._get_ace(environment).run(samples, epochs=epochs, wait=wait, workers=workers)
        return check_learning(results)

    def learn_from_traces(
        self, traces: Iterable[Any], epochs: int = 1, *, wait: bool = True, workers: int = 1
    ) -> list[SampleResult[ACEStepContext]]:
        """Learn from recorded traces of any shape; fails as :meth:`learn` does."""
        return check_learning(self._get_analyser().run(traces, epochs=epochs, wait=wait, workers=workers))

    def learn_from_feedback(self, feedback: str, ground_truth: str | None = None) -> bool:
        """Learn from the last :meth:`ask` and the user's feedback on it; True if it was learned.

        Raises ValueError when nothing was asked yet; a learning failure is
        logged with its cause and returns False.
        """
        if self._last is None:
            raise ValueError("learn_from_feedback() needs a previous ask(): there is nothing to learn from")
        last = self._last
        trace = {
            "question": last.question,
            "context": last.context,
            "ground_truth": ground_truth,
            "reasoning": last.output.reasoning,
            "answer": last.output.final_answer,
            "skill_ids": list(last.output.skill_ids),
            "feedback": feedback,
        }
        pipeline: Pipeline[ACEStepContext] = Pipeline(
            [*learning_tail(self.reflector, self.skill_manager, self._skillbook), *self._opik_steps]
        )
        context = ACEStepContext(
            skillbook=SkillbookView(self._skillbook), trace=trace, step_index=1, total_steps=1
        )
        (result,) = pipeline.run([context])
        pipeline.wait_for_background()
        if not result.ok:
            logger.error("learning from feedback failed at %s: %s", result.failed_at, result.error)
        return result.ok

    def wait_for_background(self, timeout: float | None = None) -> None:
        """Wait for the background learning of both runners."""
        for runner in (self._ace, self._analyser):
            if runner is not None:
                runner.wait_for_background(timeout)

    def flush_traces(self, timeout: int | None = None) -> bool:
        """Send the Opik traces still buffered (``opik=True``); False if some were not sent in time.

        Call it after :meth:`wait_for_background`: traces of learning still
        running are logged when that learning ends.
        """
        return all([step.flush(timeout) for step in self._opik_steps])

    # -- persistence --------------------------------------------------------------------
    def save(self, path: str | os.PathLike[str]) -> None:
        """Wait for pending learning, then save the skillbook atomically."""
        self.wait_for_background()
        self._skillbook.save_to_file(path)

    def load(self, path: str | os.PathLike[str]) -> None:
        """Load a skillbook and use it everywhere from now on.

        Pending learning into the old skillbook finishes first; the runners are
        rebuilt so no step keeps writing to the old one.
        """
        skillbook = Skillbook.load_from_file(path)
        self.wait_for_background()
        self._skillbook = skillbook
        self._ace = None
        self._analyser = None

    # -- runners -------------------------------------------------------------------------
    def _get_ace(self, environment: TaskEnvironment | None) -> ACE:
        environment = environment or self.environment
        if self._ace is None or environment is not self._ace_environment:
            if self._ace is not None:
                self._ace.wait_for_background()
            self._ace = ACE.from_roles(
                agent=self.agent,
                reflector=self.reflector,
                skill_manager=self.skill_manager,
                skillbook=self._skillbook,
                environment=environment,
                **self._tail_options(),
            )
            self._ace_environment = environment
        return self._ace

    def _get_analyser(self) -> TraceAnalyser:
        if self._analyser is None:
            self._analyser = TraceAnalyser.from_roles(
                reflector=self.reflector,
                skill_manager=self.skill_manager,
                skillbook=self._skillbook,
                **self._tail_options(),
            )
        return self._analyser

    def _tail_options(self) -> dict[str, Any]:
        """The runner options, with the Opik steps (if any) after the caller's extra steps."""
        if not self._opik_steps:
            return self.runner_options
        extra_steps = [*(self.runner_options.get("extra_steps") or []), *self._opik_steps]
        return {**self.runner_options, "extra_steps": extra_steps}


def check_learning(results: list[SampleResult[ACEStepContext]]) -> list[SampleResult[ACEStepContext]]:
    """``results``, unless every sample failed (LearningFailed); a warning when some did.

    With ``wait=False`` learning still running has failed nothing yet: only finished
    failures count.
    """
    failed = [(result.failed_at, result.error) for result in results if result.error is not None]
    if not failed:
        return results
    failed_at, first_error = failed[0]
    if len(failed) == len(results):
        raise LearningFailed(len(failed), first_error, failed_at)
    logger.warning(
        "%d of %s failed; first error at %s: %s (each result's .error holds its own)",
        len(failed),
        counted(len(results), "sample"),
        failed_at,
        one_line(f"{type(first_error).__name__}: {first_error}"),
    )
    return results


def _opik_steps(project_name: str, tags: Sequence[str] | None) -> list[OpikStep | RROpikStep]:
    """Strict Opik steps for every sample and for RR iterations; registers the LiteLLM callback too."""
    # Imported here: the RR package is only needed, and only loaded, when tracing is asked for.
    from ..rr.opik import RROpikStep

    steps: list[OpikStep | RROpikStep] = [
        OpikStep(project_name=project_name, tags=tags, strict=True),
        # A no-op unless the reflector is the Recursive Reflector (it reads reflection.raw["rr_trace"]).
        RROpikStep(project_name=project_name, tags=tags, strict=True),
    ]

    # LiteLLM's own calls are logged from when litellm loads: a runner whose model is not a
    # LiteLLM one (SimulatedLLM, a custom client) never imports it, which takes seconds.
    def register(_litellm: object) -> None:
        register_opik_litellm_callback(project_name=project_name, strict=True)

    when_litellm_loads(register)
    return steps
