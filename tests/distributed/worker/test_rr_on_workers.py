"""The Recursive Reflector on real workers (ACE_REFLECTOR=rr): hostile code is killed, the worker goes on."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
import redis

from ace_workers.distributed.errors import InvalidSettingError
from ace_workers.distributed.settings import WorkerSettings
from ace_workers.rr import RRStep, SandboxUnavailableError
from ace_workers.sim import failure_traces
from tests.support.llms import MOCK_USAGE, MODEL, install_scripted_completion, python_block
from tests.support.rr_llm import ESCAPED_KEY
from tests.support.sandbox import boundary_missing
from tests.support.workers import running_service

pytestmark = pytest.mark.slow

FACTORY = "tests.support.rr_llm:hostile_llm"


@pytest.mark.parametrize(("model", "killed"), [("rr-bomb", "memory"), ("rr-loop", "timeout")])
def test_workers_learn_through_the_sandbox_and_outlive_code_it_kills(
    model: str, killed: str, redis_url: str
) -> None:
    options = {"reflector": "rr", "reflector_model": model, "llm_factory": FACTORY}
    limits = {"rr_timeout_seconds": 1.5, "rr_memory_mb": 256}
    with running_service(redis_url, learn_threads=2, **options, **limits) as service:
        assert isinstance(service.runtime.reflector(), RRStep)
        handle = service.producer.enqueue_traces(failure_traces(4), "rr")
        status = handle.wait(timeout=90)
        assert (status.done, status.failed) == (4, 0)
        for result in handle.results():
            assert result.ok
            assert result.output.reflection is not None
            # The trace of the sandbox runs crossed the queue hop with the reflection.
            rr_trace = result.output.reflection.raw["rr_trace"]
            assert rr_trace["iterations"][0]["killed"] == killed
            assert rr_trace["final_called"] is True
        assert len(service.runtime.skillbook("rr")) > 0

        # The same workers keep serving after every one of their sandboxes was killed.
        again = service.producer.enqueue_traces(failure_traces(2, seed=5), "rr")
        assert again.wait(timeout=60).done == 2


def test_the_recursive_reflectors_llm_metrics_name_its_model(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The Reflector's model goes through the real litellm code path, answered by mock_response:
    # every turn's reply is code that calls FINAL at once. The other roles are simulated.
    final = "FINAL({'reasoning': 'the answer echoed the input', 'key_insight': 'Reverse the digits.'})"
    install_scripted_completion(monkeypatch, python_block(final))
    with running_service(redis_url, learn_threads=2, reflector="rr", reflector_model=MODEL) as service:
        handle = service.producer.enqueue_traces(failure_traces(2), "rr-metered")
        assert handle.wait(timeout=90).done == 2
        metrics = service.runtime.metrics
    labels = {"role": "reflector", "model": MODEL}
    assert metrics.value("ace_llm_attempts_total", **labels) == 2  # one turn per sample
    for kind in ("prompt", "completion"):
        assert metrics.value("ace_llm_tokens_total", kind=kind, **labels) == 2 * MOCK_USAGE[f"{kind}_tokens"]
    assert metrics.value("ace_llm_attempts_total", role="reflector", model="unknown") == 0


def test_an_unknown_reflector_is_refused_naming_the_choices() -> None:
    with pytest.raises(InvalidSettingError, match=r"ACE_REFLECTOR='deep': use one of single, rr"):
        WorkerSettings(reflector="deep")


def test_a_worker_with_rr_refuses_to_start_without_the_sandbox_boundary(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    refused = pytest.raises(SandboxUnavailableError, match="bubblewrap")
    with (
        boundary_missing(monkeypatch),
        refused,
        running_service(redis_url, reflector="rr", llm_factory=FACTORY),
    ):
        pass


def test_ace_rr_unsafe_sandbox_lets_it_start_behind_the_guards(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with (
        boundary_missing(monkeypatch),
        running_service(redis_url, reflector="rr", llm_factory=FACTORY, rr_unsafe_sandbox=True) as service,
    ):
        reflector = service.runtime.reflector()
        assert isinstance(reflector, RRStep)
        assert reflector.sandbox.boundary is None


def test_ace_rr_unsafe_sandbox_is_read_from_the_environment() -> None:
    settings = WorkerSettings.from_env({"ACE_REFLECTOR": "rr", "ACE_RR_UNSAFE_SANDBOX": "1"})
    assert settings.rr_unsafe_sandbox is True


def test_code_on_a_worker_cannot_write_into_the_fleets_redis(
    redis_url: str, redis_client: redis.Redis
) -> None:
    port = urlsplit(redis_url).port
    options = {"reflector": "rr", "reflector_model": f"rr-redis-{port}", "llm_factory": FACTORY}
    with running_service(redis_url, learn_threads=2, rr_timeout_seconds=3, **options) as service:
        handle = service.producer.enqueue_traces(failure_traces(2), "rr")
        assert handle.wait(timeout=90).done == 2
        for result in handle.results():
            assert result.output.reflection.raw["rr_trace"]["iterations"][0]["error"] is not None
    assert redis_client.exists(ESCAPED_KEY) == 0
