"""A client for any model litellm supports, with bounded retries and fallback models."""

from __future__ import annotations

import functools
import importlib
import logging
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel
from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential,
    wait_random,
)

from ..errors import LLMError, LLMRequestRejected, one_line
from ._lazy_imports import import_litellm
from .call_gate import CallGate, is_rate_limit
from .instructor_client import InstructorClient
from .response import LLMResponse, usage_from

__all__ = ["LiteLLMClient", "LiteLLMConfig"]

logger = logging.getLogger(__name__)

ModelT = TypeVar("ModelT", bound=BaseModel)

# Options the client sets itself; letting a caller pass them would silently change
# what the client does, so they fail loudly instead.
RESERVED_OPTIONS: Mapping[str, str] = {
    "model": "set the model (and fallbacks) on the client",
    "messages": "pass the conversation as the messages argument",
    "fallbacks": "set fallbacks on the client; litellm's own fallback loop would bypass the client's retries",
    "num_retries": "set num_retries on the client",
    "max_retries": "the provider SDK's retries would multiply with the client's own; set num_retries",
    "stream": "streaming is not supported; the client returns whole completions",
}


def reject_reserved_options(options: Mapping[str, Any]) -> None:
    """Raise TypeError if ``options`` holds an option the client manages itself."""
    for name in options:
        if name in RESERVED_OPTIONS:
            raise TypeError(f"option {name!r} cannot be passed through: {RESERVED_OPTIONS[name]}")


@functools.cache
def api_error_types() -> tuple[type[Exception], tuple[type[Exception], ...]]:
    """(root of every error litellm maps a provider failure to, the subset worth retrying)."""
    litellm = import_litellm()
    # litellm's exceptions subclass the openai SDK's, which litellm depends on.
    root: type[Exception] = importlib.import_module("openai").OpenAIError
    transient: tuple[type[Exception], ...] = (
        litellm.APIConnectionError,
        litellm.Timeout,  # subclasses openai's APIConnectionError, not litellm's
        litellm.RateLimitError,
        litellm.ServiceUnavailableError,
        litellm.InternalServerError,
        litellm.BadGatewayError,
    )
    return root, transient


@functools.cache
def rejection_types() -> tuple[type[Exception], ...]:
    """The errors litellm raises when the provider refused the request itself."""
    litellm = import_litellm()
    return (
        litellm.AuthenticationError,
        litellm.PermissionDeniedError,
        litellm.NotFoundError,
        litellm.BadRequestError,  # ContextWindowExceededError, ContentPolicyViolationError among them
        litellm.UnprocessableEntityError,
    )


# The HTTP statuses of a refused request: another attempt gets the same answer.
REJECTED_STATUSES = frozenset({400, 401, 403, 404, 422})


def is_rejected(error: BaseException) -> bool:
    """True when the request was refused (credentials, permission, model, request): never worth a retry."""
    if isinstance(error, rejection_types()):
        return True
    if getattr(error, "status_code", None) in REJECTED_STATUSES:
        return True
    # The openai SDK refuses some requests before sending them (no api key: a bare
    # OpenAIError), and litellm maps what it does not recognise to InternalServerError
    # with status 500, which would look transient; the chain of causes tells.
    openai = importlib.import_module("openai")
    return any(
        isinstance(link, openai.OpenAIError) and not isinstance(link, openai.APIError)
        for link in causes(error)
    )


def causes(error: BaseException) -> Iterator[BaseException]:
    """``error`` and the errors it was raised from or while handling, innermost last."""
    seen: set[int] = set()
    link: BaseException | None = error
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        yield link
        link = link.__cause__ or link.__context__


def is_transient(error: BaseException) -> bool:
    """True for a failure another attempt may not meet: connection, timeout, rate limit, 5xx."""
    _, transient = api_error_types()
    return isinstance(error, transient) and not is_rejected(error)


def log_retry(state: RetryCallState) -> None:
    """Log a failed attempt that tenacity is about to retry, at DEBUG.

    Only the call's outcome is worth a line at INFO and above: an unreachable provider would
    otherwise log every attempt of every sample (ace_llm_attempts_total counts them).
    """
    error = state.outcome.exception() if state.outcome is not None else None
    logger.debug(
        "%s: attempt %d failed (%s); retrying in %.2fs",
        state.kwargs.get("model"),
        state.attempt_number,
        error,
        state.upcoming_sleep,
    )


@dataclass(frozen=True)
class LiteLLMConfig:
    """A LiteLLMClient's settings as one value, to keep in configuration or share between clients.

    The fields are LiteLLMClient's arguments; ``extra`` holds further litellm
    options. ``api_key`` is left out of the repr.
    """

    model: str
    temperature: float = 0.0
    max_tokens: int | None = None
    timeout: float = 60.0
    fallbacks: tuple[str, ...] = ()
    num_retries: int = 3
    retry_wait_seconds: float = 1.0
    retry_max_wait_seconds: float = 30.0
    api_base: str | None = None
    api_key: str | None = field(default=None, repr=False)
    extra: Mapping[str, Any] = field(default_factory=dict, repr=False)


class LiteLLMClient:
    """Calls a model through litellm: retries transient failures, then tries the fallback models in order.

    Args:
        model: A litellm model string, e.g. ``"openai/gpt-4o-mini"``.
        fallbacks: Models tried in order once ``model`` has failed.
        num_retries: Retries per model after its first attempt, for connection errors,
            timeouts, rate limits and 5xx errors. A refused request (authentication,
            permission, unknown model, bad request) is not retried; the next fallback
            model is tried at once, and when every model refused, the error is
            LLMRequestRejected, which workers do not retry either.
        retry_wait_seconds: First backoff; it doubles per retry, and each backoff adds a
            random jitter of up to this much.
        retry_max_wait_seconds: Cap on a backoff before its jitter.
        gate: Asked before every attempt (retries, fallbacks, re-asks) and told its usage after,
            or of its 429 before the retry: a shared limiter's way in (see providers/call_gate.py).
        extra: Further litellm options sent with every call (per-call keyword
            arguments override them).
    """

    def __init__(
        self,
        model: str,
        *,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        timeout: float = 60.0,
        fallbacks: Sequence[str] = (),
        num_retries: int = 3,
        retry_wait_seconds: float = 1.0,
        retry_max_wait_seconds: float = 30.0,
        api_base: str | None = None,
        api_key: str | None = None,
        gate: CallGate | None = None,
        **extra: Any,
    ) -> None:
        reject_reserved_options(extra)
        if num_retries < 0:
            raise ValueError(f"num_retries must be >= 0, got {num_retries}")
        self.model = model
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.timeout = timeout
        self.fallbacks = tuple(fallbacks)
        self.num_retries = num_retries
        self.retry_wait_seconds = retry_wait_seconds
        self.retry_max_wait_seconds = retry_max_wait_seconds
        self.api_base = api_base
        self.api_key = api_key
        self.extra = dict(extra)
        self.gate = gate
        self._structured: InstructorClient | None = None

    @classmethod
    def from_config(cls, config: LiteLLMConfig) -> LiteLLMClient:
        """A client with the settings of ``config``."""
        return cls(
            config.model,
            temperature=config.temperature,
            max_tokens=config.max_tokens,
            timeout=config.timeout,
            fallbacks=config.fallbacks,
            num_retries=config.num_retries,
            retry_wait_seconds=config.retry_wait_seconds,
            retry_max_wait_seconds=config.retry_max_wait_seconds,
            api_base=config.api_base,
            api_key=config.api_key,
            **config.extra,
        )

    @property
    def config(self) -> LiteLLMConfig:
        """This client's settings, as a LiteLLMConfig."""
        return LiteLLMConfig(
            model=self.model,
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            timeout=self.timeout,
            fallbacks=self.fallbacks,
            num_retries=self.num_retries,
            retry_wait_seconds=self.retry_wait_seconds,
            retry_max_wait_seconds=self.retry_max_wait_seconds,
            api_base=self.api_base,
            api_key=self.api_key,
            extra=dict(self.extra),
        )

    def __repr__(self) -> str:
        # Deliberately leaves out api_key and extra, which may hold secrets.
        return f"{type(self).__name__}(model={self.model!r}, fallbacks={list(self.fallbacks)!r})"

    @property
    def models(self) -> tuple[str, ...]:
        """The primary model followed by the fallbacks, in the order they are tried."""
        return (self.model, *self.fallbacks)

    def complete(self, prompt: str, **kwargs: Any) -> LLMResponse:
        """Return the reply to a single user message."""
        return self.complete_messages([{"role": "user", "content": prompt}], **kwargs)

    def complete_messages(self, messages: list[dict[str, Any]], **kwargs: Any) -> LLMResponse:
        """Return the reply to a chat conversation.

        Raises:
            LLMError: Every model failed; the last model's error is chained.
        """
        reject_reserved_options(kwargs)
        litellm = import_litellm()
        root_error, _ = api_error_types()
        options = self._options(kwargs)
        errors: list[Exception] = []
        for position, model in enumerate(self.models, start=1):
            try:
                completion = self._complete_with_retries(litellm.completion, model, messages, options)
            except root_error as error:
                errors.append(error)
                if position < len(self.models):  # the last model's error is raised, not logged
                    logger.warning("%s failed, trying the next model: %s", model, one_line(error))
                continue
            return LLMResponse(
                text=completion.choices[0].message.content or "",
                model=model,
                usage=usage_from(getattr(completion, "usage", None)),
                cost=completion_cost(completion),
                raw=completion,
            )
        last_error = errors[-1]
        message = f"every model failed ({', '.join(self.models)}); last error: {one_line(last_error)}"
        if all(is_rejected(error) for error in errors):
            raise LLMRequestRejected(message, self.models, last_error) from last_error
        raise LLMError(message) from last_error

    def complete_structured(self, prompt: str, response_model: type[ModelT], **kwargs: Any) -> ModelT:
        """Return the reply validated as ``response_model`` (an InstructorClient with default settings)."""
        if self._structured is None:
            self._structured = InstructorClient(self)
        return self._structured.complete_structured(prompt, response_model, **kwargs)

    def _options(self, overrides: Mapping[str, Any]) -> dict[str, Any]:
        options: dict[str, Any] = {"temperature": self.temperature, "timeout": self.timeout}
        if self.max_tokens is not None:
            options["max_tokens"] = self.max_tokens
        if self.api_base is not None:
            options["api_base"] = self.api_base
        if self.api_key is not None:
            options["api_key"] = self.api_key
        # litellm passes num_retries on as the provider SDK's max_retries (default 2);
        # zero keeps the number of attempts this client's alone.
        return {**options, **self.extra, **overrides, "num_retries": 0}

    def _complete_with_retries(
        self, completion: Any, model: str, messages: list[dict[str, Any]], options: Mapping[str, Any]
    ) -> Any:
        retrying = Retrying(
            stop=stop_after_attempt(self.num_retries + 1),
            # Jitter spreads out workers that failed together, so they do not retry in lockstep.
            wait=wait_exponential(multiplier=self.retry_wait_seconds, max=self.retry_max_wait_seconds)
            + wait_random(0, self.retry_wait_seconds),
            retry=retry_if_exception(is_transient),
            before_sleep=log_retry,
            reraise=True,
        )
        if self.gate is not None:
            completion = functools.partial(self._gated_attempt, completion, self.gate)
        return retrying(completion, model=model, messages=messages, **options)

    @staticmethod
    def _gated_attempt(completion: Any, gate: CallGate, **request: Any) -> Any:
        """One attempt through the gate: asked first, told the usage or the 429 after."""
        ticket = gate.before(request["model"], request["messages"], request.get("max_tokens"))
        try:
            response = completion(**request)
        except Exception as error:
            if is_rate_limit(error):
                gate.rate_limited(ticket, error)  # before tenacity's retry, which then waits on the gate
            else:
                gate.after(ticket, None, None)
            raise
        gate.after(ticket, usage_from(getattr(response, "usage", None)), completion_cost(response))
        return response


def completion_cost(completion: Any) -> float | None:
    """The completion's cost in USD, or None when litellm cannot price the model."""
    try:
        cost = import_litellm().completion_cost(completion_response=completion)
    except Exception as error:  # any failure to price must not fail the call that was already paid for
        logger.debug("no cost for %s: %s", getattr(completion, "model", "?"), error)
        return None
    return float(cost) if cost is not None else None
