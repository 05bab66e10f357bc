"""A request the provider refused fails its sample at once on the workers: never retried."""

from __future__ import annotations

import pytest
import redis

from ace_workers.distributed.store.keys import dead_letters_key
from ace_workers.sim import failure_traces
from tests.support.llms import MODEL, auth_error, install_scripted_completion
from tests.support.workers import running_service


def test_an_authentication_error_fails_each_sample_after_one_attempt(
    monkeypatch: pytest.MonkeyPatch, redis_client: redis.Redis, redis_url: str
) -> None:
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    # The real litellm code path on the in-process workers' threads, answered by mock_response
    # (no provider is reached), refused on every call.
    scripted = install_scripted_completion(monkeypatch, auth_error())
    models = {"agent_model": MODEL, "reflector_model": MODEL, "skill_manager_model": MODEL}
    with running_service(redis_url, task_max_retries=3, retry_backoff_seconds=0.01, **models) as service:
        handle = service.producer.enqueue_traces(failure_traces(3), "refused")
        status = handle.wait(timeout=60)
        prefix = service.runtime.settings.queue_prefix

    assert (status.done, status.failed) == (0, 3)
    assert len(scripted.calls) == 3  # one Reflect call per sample: neither the client nor Celery retried
    assert all("LLMRequestRejected" in error["error"] for error in handle.errors())
    assert all("invalid api key" in error["error"] for error in handle.errors())
    assert redis_client.llen(dead_letters_key(prefix)) == 3
