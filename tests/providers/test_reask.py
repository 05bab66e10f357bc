"""Structured output by re-asking a free-text client: what a rejected reply leaves in the log."""

from __future__ import annotations

import logging

import pytest

from ace_workers.core.outputs import AgentOutput
from ace_workers.providers import LLMResponse
from ace_workers.providers.reask import complete_structured_by_reasking

PRIVATE = "zq-private-7731"  # what the sample said, quoted back in the rejected reply


def test_a_rejected_reply_is_logged_by_field_and_reason_without_its_content(
    caplog: pytest.LogCaptureFixture,
) -> None:
    replies = iter([f'{{"reasoning": "{PRIVATE}"}}', f'{{"reasoning": "ok", "final_answer": "{PRIVATE}"}}'])

    def complete(prompt: str) -> LLMResponse:
        return LLMResponse(text=next(replies), model="scripted")

    with caplog.at_level(logging.INFO, logger="ace_workers.providers.reask"):
        output = complete_structured_by_reasking(complete, "Answer.", AgentOutput, max_retries=1)
    assert output.final_answer == PRIVATE
    (record,) = caplog.records
    assert "final_answer" in record.getMessage()
    assert "Field required" in record.getMessage()
    assert PRIVATE not in record.getMessage()
