"""A producer routes a recipe from its step classes: it builds no role, LLM client or embedder."""

from __future__ import annotations

import pytest
import redis

from ace_workers.distributed.worker import runtime as runtime_module
from ace_workers.distributed.worker.runtime import WorkerRuntime
from ace_workers.sim import failure_traces
from tests.support.unbuildable import REFUSING_FACTORY
from tests.support.workers import build_test_service


def _refuse(*args: object, **kwargs: object) -> None:
    raise AssertionError("the producer built what only a worker needs")


def test_a_producer_with_dedup_on_enqueues_without_building_roles_llms_or_embedders(
    redis_url: str, redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runtime_module, "make_embedder", _refuse)
    monkeypatch.setattr(WorkerRuntime, "pipeline", _refuse)
    service = build_test_service(
        redis_url, llm_factory=REFUSING_FACTORY, dedup_provider="sentence_transformers"
    )
    try:
        handle = service.producer.enqueue_traces(failure_traces(3), "book")
        assert handle.status().enqueued == 3
        queued = service.dispatcher.queue_depths([service.runtime.queue("learn")])
        assert queued == {service.runtime.queue("learn"): 3}  # each chain's first step (Reflect)
    finally:
        service.close()


def test_routes_with_dedup_on_end_on_the_write_queue_with_a_deduplicate_step(redis_url: str) -> None:
    service = build_test_service(redis_url, dedup_provider="sentence_transformers")
    try:
        routes = service.runtime.routes("trace_analyser")
    finally:
        service.close()
    assert [(route.name, route.queue_role) for route in routes] == [
        ("ReflectStep", "learn"),
        ("TagStep", "write"),
        ("UpdateStep", "learn"),
        ("ApplyStep", "write"),
        ("DeduplicateStep", "write"),
    ]
