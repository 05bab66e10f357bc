"""SIMULATION: an offline stand-in for an LLM client, for tests, the demo and benchmarks.

:class:`SimulatedLLM` satisfies :class:`~ace_workers.protocols.LLMClientLike`.
It never reaches a network: it reads the real prompts the roles send and
answers as :mod:`ace_workers.sim.behaviour` decides for the synthetic task
family of :mod:`ace_workers.sim.tasks`. On top it injects, from one seeded
RNG, the faults a real client shows: failed calls (``LLMError``, as a generic
provider error or as a rate limit), output that fails validation until the
retries run out (``RetriesExhausted``), and latency.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from ..core.outputs import AgentOutput, ReflectorOutput, SkillManagerOutput
from ..dedup.prompts import ConsolidationResponse
from ..errors import LLMError, RetriesExhausted
from ..roles.skill_manager_tools import SkillManagerTurn
from .behaviour import (
    SimWorld,
    simulate_agent,
    simulate_consolidation,
    simulate_reflector,
    simulate_skill_manager,
    simulate_skill_manager_turn,
)
from .recursive import simulate_recursive_reflector
from .tasks import TOPICS, Topic

__all__ = ["FAILURE_MESSAGES", "SimulatedCompletion", "SimulatedLLM"]

ModelT = TypeVar("ModelT", bound=BaseModel)
Behaviour = Callable[[str, SimWorld], BaseModel]

MODEL_NAME = "simulated"
BEHAVIOURS: dict[type[BaseModel], Behaviour] = {
    AgentOutput: simulate_agent,
    ReflectorOutput: simulate_reflector,
    SkillManagerOutput: simulate_skill_manager,
    SkillManagerTurn: simulate_skill_manager_turn,
    ConsolidationResponse: simulate_consolidation,
}
# The title line each role prompt opens with, so free-text completion can answer in kind.
PROMPT_TITLES: dict[str, type[BaseModel]] = {
    "# Agent": AgentOutput,
    "# Reflector": ReflectorOutput,
    "# Skill manager": SkillManagerOutput,
    "# Skill manager with tools": SkillManagerTurn,
    "# Skill consolidation": ConsolidationResponse,
}
# Prompts answered with free text (here: code) rather than a role's JSON, by title line.
TEXT_BEHAVIOURS: dict[str, Callable[[str, SimWorld], str]] = {
    "# Recursive reflector": simulate_recursive_reflector,
}
TEXT_KEY = "text"  # the call-record key of free-text completions
# What a failed call says, by failure kind. Both are LLMError, the type LiteLLMClient raises
# once its own retries of a provider error (a 429 among them) are spent, so workers treat a
# simulated failure exactly as a real one.
FAILURE_MESSAGES: dict[str, str] = {
    "error": "simulated provider failure",
    "rate_limit": "simulated rate limit: 429 Too Many Requests",
}


def _tokens(text: str) -> int:
    # A rough but stable count: about four characters per token.
    return max(1, len(text) // 4)


@dataclass
class SimulatedCompletion:
    """A free-text reply of :meth:`SimulatedLLM.complete`."""

    text: str
    raw: dict[str, Any] = field(default_factory=dict)


class SimulatedLLM:
    """A deterministic, offline simulation of an LLM client, seeded and thread-safe.

    Args:
        latency: Seconds each call sleeps, to model a slow provider.
        failure_rate: Chance that a call raises :class:`LLMError`.
        failure: What a failed call reports: ``"error"`` (a generic provider
            failure) or ``"rate_limit"`` (a 429); see FAILURE_MESSAGES.
        malformed_rate: Chance that one attempt's output fails validation;
            a structured call retries up to ``max_retries`` attempts, then
            raises :class:`RetriesExhausted`.
        seed: Seed of the one RNG all faults are drawn from.
        trust_threshold: Net helpful votes (helpful - harmful) a rule skill
            needs before the simulated agent applies it. 0 applies a skill the
            moment it is learned; higher values make learning take several
            failures per topic, for a visible learning curve.
        topics: The task family the simulator knows (default: all of TOPICS).
        cost_per_1k_tokens: USD each 1000 tokens cost; when above 0, ``raw`` carries a ``cost``.
        paraphrase: The Reflector states a learned rule in words chosen per sample (by an
            RNG seeded with ``seed`` and the sample's input) instead of always the canonical
            sentence, so restatements of one rule are different strings.

    Every call is recorded: :meth:`call_count`, :meth:`last_prompt` and
    :attr:`usage` report them. ``raw`` on each output carries fake token usage
    (about four characters a token), which tracing reports as real usage.
    """

    # What tracing names the model and its provider (a LiteLLMClient has a model string).
    model = MODEL_NAME
    provider_name = MODEL_NAME

    def __init__(
        self,
        *,
        latency: float = 0.0,
        failure_rate: float = 0.0,
        failure: str = "error",
        malformed_rate: float = 0.0,
        seed: int = 0,
        trust_threshold: int = 0,
        topics: Sequence[Topic] = TOPICS,
        cost_per_1k_tokens: float = 0.0,
        paraphrase: bool = False,
    ) -> None:
        for name, rate in (("failure_rate", failure_rate), ("malformed_rate", malformed_rate)):
            if not 0.0 <= rate <= 1.0:
                raise ValueError(f"{name} must be between 0 and 1, got {rate}")
        if failure not in FAILURE_MESSAGES:
            raise ValueError(f"failure must be one of {', '.join(FAILURE_MESSAGES)}, got {failure!r}")
        if latency < 0:
            raise ValueError(f"latency must be >= 0, got {latency}")
        if cost_per_1k_tokens < 0:
            raise ValueError(f"cost_per_1k_tokens must be >= 0, got {cost_per_1k_tokens}")
        if trust_threshold < 0:
            raise ValueError(f"trust_threshold must be >= 0, got {trust_threshold}")
        self.latency = latency
        self.failure_rate = failure_rate
        self.failure = failure
        self.malformed_rate = malformed_rate
        self.seed = seed
        self.cost_per_1k_tokens = cost_per_1k_tokens
        self.world = SimWorld(
            topics=tuple(topics), trust_threshold=trust_threshold, paraphrase=paraphrase, paraphrase_seed=seed
        )
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._calls: dict[str, int] = {}
        self._last_prompts: dict[str, str] = {}
        self._usage = {"prompt_tokens": 0, "completion_tokens": 0, "calls": 0}

    def __repr__(self) -> str:
        return (
            f"SimulatedLLM(failure_rate={self.failure_rate}, failure={self.failure!r}, "
            f"malformed_rate={self.malformed_rate}, "
            f"latency={self.latency}, seed={self.seed}, trust_threshold={self.world.trust_threshold}, "
            f"paraphrase={self.world.paraphrase})"
        )

    # -- records ----------------------------------------------------------------------
    def call_count(self, model: type[BaseModel] | str | None = None) -> int:
        """Calls made for ``model`` (a response model, its name, or "text"); all calls when None."""
        with self._lock:
            if model is None:
                return sum(self._calls.values())
            return self._calls.get(model if isinstance(model, str) else model.__name__, 0)

    def last_prompt(self, model: type[BaseModel] | str) -> str | None:
        """The prompt of the latest call for ``model`` (a response model, its name, or "text")."""
        with self._lock:
            return self._last_prompts.get(model if isinstance(model, str) else model.__name__)

    @property
    def usage(self) -> dict[str, int]:
        """Fake token totals over every attempt so far, and the number of calls."""
        with self._lock:
            return dict(self._usage)

    def _begin(self, key: str, prompt: str) -> bool:
        """Record a call; True if the call is to fail."""
        with self._lock:
            self._calls[key] = self._calls.get(key, 0) + 1
            self._last_prompts[key] = prompt
            self._usage["calls"] += 1
            return self._rng.random() < self.failure_rate

    def _count_tokens(self, prompt: str, completion: str) -> None:
        with self._lock:
            self._usage["prompt_tokens"] += _tokens(prompt)
            self._usage["completion_tokens"] += _tokens(completion)

    def _attempt_malformed(self, prompt: str, completion: str) -> bool:
        """Count one attempt's tokens; True if its output is to come out malformed."""
        self._count_tokens(prompt, completion)
        with self._lock:
            return self._rng.random() < self.malformed_rate

    def _pause(self) -> None:
        if self.latency:
            time.sleep(self.latency)

    # -- LLMClientLike ------------------------------------------------------------------
    def complete(self, prompt: str, **kwargs: Any) -> SimulatedCompletion:
        """A free-text reply: a role prompt's JSON, the Recursive Reflector's code, else a fixed sentence."""
        self._pause()
        if self._begin(TEXT_KEY, prompt):
            raise LLMError(f"{FAILURE_MESSAGES[self.failure]} (failure_rate)")
        model = next((m for title, m in PROMPT_TITLES.items() if prompt.startswith(title + "\n")), None)
        writer = next((w for title, w in TEXT_BEHAVIOURS.items() if prompt.startswith(title + "\n")), None)
        if model is not None:
            text = BEHAVIOURS[model](prompt, self.world).model_dump_json()
        elif writer is not None:
            text = writer(prompt, self.world)
        else:
            text = f"(simulated reply to a {len(prompt)}-character prompt)"
        self._count_tokens(prompt, text)
        return SimulatedCompletion(text=text, raw=self._raw(prompt, text, attempts=1))

    def complete_structured(self, prompt: str, response_model: type[ModelT], **kwargs: Any) -> ModelT:
        """The simulated role output for ``prompt``, validated as ``response_model``.

        Honours ``max_retries`` (default 3) the way a validating client does:
        each malformed attempt is retried; when all are malformed,
        RetriesExhausted carries the attempts, the last error and the usage.
        """
        behaviour = BEHAVIOURS.get(response_model)
        if behaviour is None:
            supported = ", ".join(m.__name__ for m in BEHAVIOURS)
            raise TypeError(f"SimulatedLLM simulates only {supported}, not {response_model.__name__}")
        max_retries = max(1, int(kwargs.get("max_retries", 3)))
        self._pause()
        if self._begin(response_model.__name__, prompt):
            raise LLMError(f"{FAILURE_MESSAGES[self.failure]} for {response_model.__name__} (failure_rate)")
        result = behaviour(prompt, self.world)
        completion = result.model_dump_json()
        last_error: ValidationError | None = None
        for attempt in range(1, max_retries + 1):
            if not self._attempt_malformed(prompt, completion):
                output = response_model.model_validate_json(completion)
                return output.model_copy(update={"raw": self._raw(prompt, completion, attempts=attempt)})
            last_error = self._malformed_error(response_model, completion)
        usage = {
            "prompt_tokens": _tokens(prompt) * max_retries,
            "completion_tokens": _tokens(completion) * max_retries,
        }
        raise RetriesExhausted(
            response_model.__name__,
            attempts=max_retries,
            last_error=last_error,
            last_completion=completion[: len(completion) // 2],
            usage=usage,
        )

    @staticmethod
    def _malformed_error(model: type[BaseModel], completion: str) -> ValidationError:
        # A cut-off reply, validated for real: the error is the one a client would see.
        try:
            model.model_validate_json(completion[: len(completion) // 2])
        except ValidationError as exc:
            return exc
        raise AssertionError("half a JSON object validated")  # pragma: no cover

    def _raw(self, prompt: str, completion: str, *, attempts: int) -> dict[str, Any]:
        prompt_tokens, completion_tokens = _tokens(prompt), _tokens(completion)
        raw: dict[str, Any] = {
            "model": MODEL_NAME,
            "attempts": attempts,
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }
        if self.cost_per_1k_tokens > 0:
            raw["cost"] = (prompt_tokens + completion_tokens) * self.cost_per_1k_tokens / 1000
        return raw
