"""Planted secrets and personal data never leave the producer: not to a prompt, Redis, a log or a skill.

Real Redis and real in-process Celery workers learn from traces holding an API key, an AWS key,
a GitHub token, two e-mail addresses and a card number; once with the simulated LLM recording
every prompt, once through the real litellm and instructor code answered by ``mock_response``.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
import redis

from ace_workers.distributed.store.keys import batch_key, dead_letters_key
from ace_workers.distributed.tenancy import Tenant
from ace_workers.redaction import redactor_for
from tests.support.llms import MODEL, SPEC_REPLY, install_scripted_completion
from tests.support.redaction import (
    FACTORY,
    LEAKED_KEY,
    RecordingLLM,
    found_in,
    planted_traces,
    redis_text,
)
from tests.support.workers import build_test_service, running_service

SKILLBOOK = "support"


def _skill_texts(service: Any) -> str:
    book = service.runtime.skillbook(SKILLBOOK)
    book.refresh()
    return "\n".join(f"{skill.section} {skill.content}" for skill in book.skills())


def _stored_traces(client: redis.Redis, prefix: str, batch_id: str) -> list[Any]:
    return [json.loads(raw)["trace"] for raw in client.lrange(batch_key(prefix, batch_id, "items"), 0, -1)]


def _log_text(caplog: pytest.LogCaptureFixture) -> str:
    return "\n".join(
        f"{record.getMessage()} {record.exc_text or ''} {record.exc_info or ''}" for record in caplog.records
    )


def test_nothing_planted_reaches_the_simulated_llm_redis_the_logs_or_a_skill(
    redis_client: redis.Redis, redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    RecordingLLM.prompts.clear()
    with running_service(redis_url, llm_factory=FACTORY) as service:
        handle = service.producer.enqueue_traces(planted_traces(4), SKILLBOOK)
        status = handle.wait(timeout=60)
        prefix = service.runtime.settings.queue_prefix
        skills = _skill_texts(service)
        stored = _stored_traces(redis_client, prefix, handle.batch_id)

    assert (status.done, status.failed) == (4, 0)
    assert RecordingLLM.prompts, "the recording LLM saw no prompt"
    assert [found_in(prompt) for prompt in RecordingLLM.prompts if found_in(prompt)] == []
    # The prompts were built from the traces: their placeholders are there instead.
    assert any("<EMAIL_1>" in prompt and "<CARD_1>" in prompt for prompt in RecordingLLM.prompts)
    assert found_in(redis_text(redis_client)) == []
    assert found_in(_log_text(caplog)) == []
    assert found_in(skills) == []
    assert "<SECRET_" in skills  # the SkillManager's leaked key, redacted before it was applied
    assert LEAKED_KEY not in skills
    # Stable within a trace: the same address twice is <EMAIL_1> both times, the other <EMAIL_2>.
    assert stored[0]["question"].endswith("for <EMAIL_1> refused?")
    assert stored[0]["answer"] == "I charged card <CARD_1> and wrote to <EMAIL_1> and to <EMAIL_2>."


def test_nothing_planted_reaches_litellm_redis_the_logs_or_a_skill(
    monkeypatch: pytest.MonkeyPatch,
    redis_client: redis.Redis,
    redis_url: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    # Every role is answered by the one reply; its SkillManager part adds a skill quoting a key.
    reply = json.loads(SPEC_REPLY)
    reply["update"]["operations"].append(
        {"type": "ADD", "section": "billing", "content": f"Rotate key {LEAKED_KEY} first."}
    )
    scripted = install_scripted_completion(monkeypatch, json.dumps(reply))
    models = {"agent_model": MODEL, "reflector_model": MODEL, "skill_manager_model": MODEL}
    with running_service(redis_url, **models) as service:
        handle = service.producer.enqueue_traces(planted_traces(2), SKILLBOOK)
        status = handle.wait(timeout=60)
        skills = _skill_texts(service)

    assert (status.done, status.failed) == (2, 0)
    assert scripted.prompts, "litellm was never called"
    assert [found_in(prompt) for prompt in scripted.prompts if found_in(prompt)] == []
    assert any("<EMAIL_1>" in prompt for prompt in scripted.prompts)
    assert found_in(redis_text(redis_client)) == []
    assert found_in(_log_text(caplog)) == []
    assert found_in(skills) == []
    assert "<SECRET_" in skills  # numbered after the trace's own three


def test_a_tenant_that_turns_redaction_off_has_its_traces_kept_as_they_are(
    redis_client: redis.Redis, redis_url: str
) -> None:
    RecordingLLM.prompts.clear()
    with running_service(redis_url, llm_factory=FACTORY) as service:
        service.runtime.tenants.registry.add(Tenant("raw", skillbooks=("raw-book",), redact="off"))
        service.runtime.tenants.forget()
        handle = service.producer.enqueue_traces(planted_traces(1), "raw-book")
        handle.wait(timeout=60)
        stored = _stored_traces(redis_client, service.runtime.settings.queue_prefix, handle.batch_id)

    assert stored == planted_traces(1)


def test_a_worker_redacts_a_message_an_older_producer_stored_unredacted(
    redis_client: redis.Redis, redis_url: str
) -> None:
    RecordingLLM.prompts.clear()
    with running_service(redis_url, llm_factory=FACTORY) as service:
        prefix = service.runtime.settings.queue_prefix
        # A producer process of its own that redacts nothing, as one older than redaction.
        old = build_test_service(redis_url, queue_prefix=prefix, llm_factory=FACTORY)
        try:
            old.runtime.redactor = lambda tenant: redactor_for("off")  # type: ignore[method-assign]
            handle = old.producer.enqueue_traces(planted_traces(2), SKILLBOOK)
            status = handle.wait(timeout=60)
        finally:
            old.close()
        stored = _stored_traces(redis_client, prefix, handle.batch_id)

    assert status.done == 2
    assert stored == planted_traces(2)  # the old producer's copy is as it sent it
    assert RecordingLLM.prompts
    assert [found_in(prompt) for prompt in RecordingLLM.prompts if found_in(prompt)] == []
    assert any("<EMAIL_1>" in prompt for prompt in RecordingLLM.prompts)


def test_failed_samples_leave_nothing_planted_in_the_logs_or_the_dead_letters(
    redis_client: redis.Redis, redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    # Every LLM call fails: each sample fails, is logged and dead-lettered with its payload.
    failing = {"sim_failure_rate": 1.0, "sim_failure": "error", "task_max_retries": 0}
    with running_service(redis_url, **failing) as service:
        handle = service.producer.enqueue_traces(planted_traces(2), SKILLBOOK)
        status = handle.wait(timeout=60)
        prefix = service.runtime.settings.queue_prefix

    assert status.failed == 2
    assert redis_client.llen(dead_letters_key(prefix)) == 2
    assert "failed" in _log_text(caplog)
    assert found_in(_log_text(caplog)) == []
    assert found_in(redis_text(redis_client)) == []
