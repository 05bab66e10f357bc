"""Structured output: validate the model's reply, feed errors back, re-ask a bounded number of times."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from pydantic import BaseModel

from ..errors import LLMError, RetriesExhausted
from ._lazy_imports import import_instructor
from .response import USAGE_KEYS, ChatClient, LLMResponse

if TYPE_CHECKING:
    from instructor import Mode


__all__ = ["InstructorClient", "wrap_with_instructor"]

logger = logging.getLogger(__name__)

ModelT = TypeVar("ModelT", bound=BaseModel)

# The field of a response model that receives provider metadata (model, usage, cost).
RAW_FIELD = "raw"
# What instructor hangs on the outputs it returns (see as_plain_instance).
INSTRUCTOR_ATTRIBUTES = ("_raw_response", "_total_usage")


class InstructorClient:
    """Wraps a LiteLLMClient so replies come back as validated pydantic models.

    Every attempt, re-asks included, goes through the wrapped client, so it gets
    the client's network retries and fallback models; instructor's loop on top
    only handles replies that fail validation.

    Args:
        max_retries: Re-asks after the first reply fails validation. With
            instructor 1.17 a call makes at most ``max_retries + 1`` attempts.
        mode: How instructor asks for structure. Default ``Mode.JSON`` (the schema
            in a system message and ``response_format=json_object``). ``Mode.TOOLS``
            needs the ``mcp`` package with litellm 1.106: litellm imports it for any
            call that passes tools.
    """

    def __init__(self, llm: ChatClient, *, max_retries: int = 3, mode: Mode | None = None) -> None:
        if max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {max_retries}")
        self.llm = llm
        self.max_retries = max_retries
        self.mode = mode

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.llm!r}, max_retries={self.max_retries}, mode={self.mode})"

    def complete(self, prompt: str, **kwargs: Any) -> LLMResponse:
        """Return the wrapped client's free-text reply."""
        return self.llm.complete(prompt, **kwargs)

    def complete_structured(self, prompt: str, response_model: type[ModelT], **kwargs: Any) -> ModelT:
        """Return the reply validated as ``response_model``, its ``raw`` field (if any) filled.

        ``raw`` gets the answering model, and token usage and cost summed over all attempts.

        Keyword arguments go to litellm, except instructor's own (``max_retries``
        overrides the client's, ``context`` is the validation context).

        Raises:
            RetriesExhausted: The reply still failed validation after every attempt.
            LLMError: The wrapped client could not get a reply at all.
        """
        instructor = import_instructor()
        calls: list[LLMResponse] = []

        def create(messages: list[dict[str, Any]], **options: Any) -> Any:
            response = self.llm.complete_messages(messages, **options)
            calls.append(response)
            return response.raw

        # Built per call, which costs microseconds, so that `calls` belongs to this call alone.
        client = instructor.from_litellm(create, mode=self.mode or instructor.Mode.JSON)
        max_retries = kwargs.pop("max_retries", self.max_retries)
        try:
            result: ModelT = client.chat.completions.create(
                messages=[{"role": "user", "content": prompt}],
                response_model=response_model,
                max_retries=max_retries,
                **kwargs,
            )
        except instructor.core.InstructorRetryException as error:
            raise_for_retry_error(error, response_model.__name__, calls)
        except instructor.core.InstructorError as error:  # e.g. output cut off at max_tokens
            raise LLMError(f"{response_model.__name__}: {error}") from error
        output = as_plain_instance(result, response_model)
        if RAW_FIELD in response_model.model_fields and calls:
            setattr(output, RAW_FIELD, provider_metadata(calls))
        return output


def wrap_with_instructor(
    client: ChatClient, *, max_retries: int = 3, mode: Mode | None = None
) -> InstructorClient:
    """Return ``client`` wrapped for structured output."""
    return InstructorClient(client, max_retries=max_retries, mode=mode)


def as_plain_instance(result: BaseModel, response_model: type[ModelT]) -> ModelT:
    """``result``'s validated state in an instance of ``response_model`` itself, minus instructor's extras.

    instructor 1.17 returns an instance of a class it derives from the response
    model (same name, its ResponseSchema mixed in), with the last litellm response
    and usage hung on as undeclared attributes. Such an output never equals one
    built directly, and pickling it fails ("not the same object as ..."), which
    would break any pickle-based transport. The state is copied as pickle would
    copy it: no second validation, no ``model_post_init``.
    """
    state = result.__getstate__()
    state["__dict__"] = {
        name: value for name, value in state["__dict__"].items() if name not in INSTRUCTOR_ATTRIBUTES
    }
    plain = response_model.__new__(response_model)
    plain.__setstate__(state)
    return plain


def raise_for_retry_error(error: Any, what: str, calls: Sequence[LLMResponse]) -> NoReturn:
    """Raise the ace-workers error for instructor's retry exception.

    Instructor raises the same exception whether the replies kept failing
    validation or the call itself failed (then after one attempt, whatever the
    error). Only the first is RetriesExhausted; the second is re-raised as the
    call's own error, which from the wrapped client is already an LLMError.
    """
    cause: BaseException | None = error.__cause__
    failed_attempts = getattr(error, "failed_attempts", None) or []
    if failed_attempts and cause is failed_attempts[-1].exception:
        raise RetriesExhausted(
            what=what,
            attempts=error.n_attempts,
            last_error=cause,
            last_completion=error.last_completion,
            usage=total_usage(calls),
        ) from error
    if cause is None:
        raise LLMError(f"{what}: {error}") from error
    raise cause


def total_usage(calls: Sequence[LLMResponse]) -> dict[str, int]:
    """Token usage summed over calls."""
    return {key: sum(call.usage[key] for call in calls) for key in USAGE_KEYS}


def provider_metadata(calls: Sequence[LLMResponse]) -> dict[str, Any]:
    """What goes into an output's ``raw``: the model that answered, and usage and cost over all attempts."""
    costs = [call.cost for call in calls]
    return {
        "model": calls[-1].model,
        "usage": total_usage(calls),
        # A partial sum would understate the spend, so any unpriced call makes the total unknown.
        "cost": None if None in costs else sum(cost for cost in costs if cost is not None),
        "attempts": len(calls),
    }
