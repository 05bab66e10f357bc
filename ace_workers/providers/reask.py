"""Structured output from any free-text client: ask for JSON matching the schema, validate, re-ask.

For clients that drive something other than litellm (the ``claude`` CLI, a
LangChain chat model), where instructor's litellm path does not apply. Each
re-ask shows the model its rejected reply and the validation error.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from typing import TypeVar

from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError

from ..errors import RetriesExhausted
from .instructor_client import RAW_FIELD, provider_metadata, total_usage
from .response import LLMResponse

__all__ = ["complete_structured_by_reasking", "extract_json"]

logger = logging.getLogger(__name__)

ModelT = TypeVar("ModelT", bound=BaseModel)

# The outermost JSON object of a reply, code fences or prose around it or not.
_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.MULTILINE)

STRUCTURED_SUFFIX = """

## Output format
Reply with one JSON object only, no prose and no code fence, valid against this JSON schema:
{schema}"""

RETRY_PROMPT = """{prompt}

## Your previous reply
{reply}

## Why it was rejected
{error}

Reply again with a corrected JSON object only."""


def complete_structured_by_reasking(
    complete: Callable[[str], LLMResponse], prompt: str, response_model: type[ModelT], max_retries: int
) -> ModelT:
    """The reply of ``complete`` validated as ``response_model``; its ``raw`` field (if any) gets usage.

    Raises:
        RetriesExhausted: the reply still failed validation after ``max_retries`` re-asks.
    """
    schema = json.dumps(response_model.model_json_schema(), separators=(",", ":"))
    structured = prompt + STRUCTURED_SUFFIX.format(schema=schema)
    asked = structured
    calls: list[LLMResponse] = []
    error: BaseException | None = None
    for attempt in range(1, max_retries + 2):
        response = complete(asked)
        calls.append(response)
        try:
            output = response_model.model_validate_json(extract_json(response.text))
        except PydanticValidationError as exc:
            error = exc
            logger.info(
                "%s: reply %d of at most %d failed validation: %s",
                response_model.__name__,
                attempt,
                max_retries + 1,
                # Where and why, never the rejected value: it may quote the sample the prompt holds.
                exc.errors(include_url=False, include_input=False, include_context=False)[:3],
            )
            asked = RETRY_PROMPT.format(
                prompt=structured,
                reply=response.text[:4000],
                error=str(exc)[:2000],
            )
            continue
        if RAW_FIELD in response_model.model_fields:
            setattr(output, RAW_FIELD, provider_metadata(calls))
        return output
    raise RetriesExhausted(
        what=response_model.__name__,
        attempts=len(calls),
        last_error=error,
        last_completion=calls[-1].text if calls else None,
        usage=total_usage(calls),
    )


def extract_json(text: str) -> str:
    """The JSON object in a reply: without code fences, from its first ``{`` to its last ``}``."""
    stripped = _FENCE.sub("", text.strip())
    start, end = stripped.find("{"), stripped.rfind("}")
    return stripped[start : end + 1] if 0 <= start < end else stripped
