"""The distributed path end to end: real Redis (db 15), real in-process Celery workers."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import redis

from ace_workers.core import Skillbook
from ace_workers.distributed.producer.distributed_runner import DistributedRunner
from ace_workers.distributed.service import Service, build_service, local_workers
from ace_workers.distributed.settings import WorkerSettings
from ace_workers.distributed.store.keys import dead_letters_key
from ace_workers.distributed.worker.errors import PayloadError
from ace_workers.distributed.worker.tasks import run_step
from ace_workers.roles import Reflector, SkillManager
from ace_workers.runners import TraceAnalyser
from ace_workers.sim import SimulatedLLM, failure_traces, make_tasks
from tests.support.recipes import TEST_RECIPES
from tests.support.workers import running_service


@pytest.fixture
def service(redis_client: redis.Redis, redis_url: str) -> Iterator[Service]:
    """In-process workers for all three queues on the test Redis (flushed around the test)."""
    with running_service(redis_url) as built:
        yield built


def test_a_batch_of_traces_learns_every_rule_into_the_redis_skillbook(service: Service) -> None:
    handle = service.producer.enqueue_traces(failure_traces(20), "support")
    status = handle.wait(timeout=60)
    assert (status.done, status.failed, status.total) == (20, 0, 20)
    book = service.runtime.store("support").export()
    assert sorted(s.section for s in book.skills()) == ["flux", "mirp", "quill", "tarn", "zorb"]
    assert handle.progress().skills_added == 5
    assert all(r.ok for r in handle.results())


def test_samples_go_through_the_ace_chain_and_accuracy_rises_across_epochs(service: Service) -> None:
    samples = make_tasks(15, seed=5, topics=5)
    handle = service.producer.enqueue_samples(samples, "live", epochs=3)
    handle.wait(timeout=120)
    results = handle.results()
    assert len(results) == 45
    assert all(r.ok for r in results)

    def accuracy(epoch: int) -> float:
        outs = [r.output for r in results if r.output is not None and r.output.epoch == epoch]
        right = [
            o
            for o in outs
            if o.agent_output is not None and o.agent_output.final_answer == o.sample.ground_truth
        ]
        return len(right) / len(outs)

    assert accuracy(3) == 1.0
    assert accuracy(1) < accuracy(3)
    assert [r.output.global_sample_index for r in results if r.output is not None] == list(range(1, 46))


def test_the_redis_skillbook_equals_the_in_process_one_on_a_sequential_configuration(
    service: Service,
) -> None:
    traces = failure_traces(12)
    local = TraceAnalyser.from_roles(
        reflector=Reflector(SimulatedLLM()), skill_manager=SkillManager(SimulatedLLM())
    )
    for trace in traces:  # one sample at a time, like max_in_flight=1 below
        local.run([trace])
    handle = service.producer.enqueue_traces(traces, "same", max_in_flight=1)
    handle.wait(timeout=60)
    remote = service.runtime.store("same").export()

    def shape(book: Skillbook) -> list[tuple[str, str, str, int, int, int]]:
        return [(s.id, s.section, s.content, s.helpful, s.harmful, s.neutral) for s in book.skills()]

    assert shape(remote) == shape(local.skillbook)


def test_the_same_apply_delivered_twice_changes_the_skillbook_once(service: Service) -> None:
    handle = service.producer.enqueue_traces(failure_traces(1), "once")
    handle.wait(timeout=60)
    store = service.runtime.store("once")
    version = store.version()
    _, routes = service.runtime.pipeline("trace_analyser", "once")
    apply_index = next(r.index for r in routes if r.name == "ApplyStep")
    history = store.history(limit=10)
    applied = next(c for c in history if c.source and c.source.get("step") == "ApplyStep")
    # Rebuild the Apply task's input: the Update step's output of that same sample.
    (result,) = handle.results()
    from ace_workers.distributed.worker.payload import context_to_payload

    payload = context_to_payload(result.output, claims=service.runtime.claims)  # type: ignore[arg-type]
    kwargs = {
        "recipe": "trace_analyser",
        "skillbook": "once",
        "index": apply_index,
        "batch_id": handle.batch_id,
        "epoch": 1,
        "sample_index": 1,
    }
    run_step(service.dispatcher, payload, **kwargs)
    run_step(service.dispatcher, payload, **kwargs)
    assert store.version() == version
    assert applied.idempotency_key is not None
    assert store.stats()["duplicate_deliveries"] >= 2


def test_a_failing_step_is_recorded_in_the_batch_and_dead_lettered(service: Service) -> None:
    traces = failure_traces(3)
    handle = service.producer.enqueue_traces(traces, "broken", recipe="failing")
    status = handle.wait(timeout=60)
    assert (status.done, status.failed) == (0, 3)
    errors = handle.errors()
    assert [e["step"] for e in errors] == ["Explode"] * 3
    assert "boom on purpose" in errors[0]["error"]
    key = dead_letters_key(service.runtime.settings.queue_prefix)
    dead = [json.loads(x) for x in service.runtime.redis.lrange(key, 0, -1)]
    assert len(dead) == 3
    assert {d["step"] for d in dead} == {"Explode"}
    assert [r.failed_at for r in handle.results()] == ["Explode"] * 3


def test_a_trace_that_is_not_json_is_rejected_at_enqueue(service: Service) -> None:
    with pytest.raises(PayloadError, match="set"):
        service.producer.enqueue_traces([{"question": "q", "tags": {"a", "b"}}], "bad")


def test_an_unknown_recipe_or_bad_skillbook_name_is_rejected_before_sending(service: Service) -> None:
    with pytest.raises(ValueError, match="unknown recipe"):
        service.producer.enqueue_traces(failure_traces(1), "ok", recipe="nope")
    with pytest.raises(ValueError, match="a}:b"):
        service.producer.enqueue_traces(failure_traces(1), "a}:b")


def test_the_distributed_runner_is_a_drop_in_for_the_in_process_runners(service: Service) -> None:
    runner = DistributedRunner(service.producer, skillbook="runner", recipe="ace")
    samples = make_tasks(6, seed=9, topics=3)
    results = runner.run(samples, epochs=2, timeout=60)
    assert len(results) == 12
    assert all(r.ok for r in results)
    assert all(r.done for r in results)
    assert [r.sample.question for r in results[:6]] == [s.question for s in samples]
    assert runner.learning_stats == {"active": 0, "completed": 12, "failed": 0}
    assert runner.run(samples[:2], wait=False) == []
    runner.wait_for_background(timeout=60)
    assert len(runner.results()) == 2


def test_a_stream_of_unknown_length_is_sent_lazily_and_sealed(service: Service) -> None:
    pulled = 0
    traces = failure_traces(8)

    def stream() -> Iterator[dict[str, str]]:
        nonlocal pulled
        for trace in traces:
            pulled += 1
            yield trace

    handle = service.producer.enqueue_traces(stream(), "stream", max_in_flight=2)
    status = handle.wait(timeout=60)
    assert pulled == 8
    assert (status.total, status.done) == (8, 8)


@pytest.fixture
def quick_retry_service(redis_client: redis.Redis, redis_url: str) -> Iterator[Service]:
    settings = WorkerSettings(
        redis_url=redis_url,
        queue_prefix="retry",
        task_max_retries=3,
        retry_backoff_seconds=0.01,
        recipes=TEST_RECIPES,
    )
    built = build_service(settings, redis_url=redis_url)
    with local_workers(built, learn_threads=2):
        yield built
    built.close()


def test_a_rate_limited_step_is_retried_with_backoff_and_then_succeeds(
    quick_retry_service: Service, redis_url: str, redis_client: redis.Redis
) -> None:
    traces = [{"id": str(i), "redis_url": redis_url} for i in range(3)]
    handle = quick_retry_service.producer.enqueue_traces(traces, "retry", recipe="flaky")
    status = handle.wait(timeout=60)
    assert (status.done, status.failed) == (3, 0)
    assert [int(redis_client.get(f"flaky:{i}") or 0) for i in range(3)] == [3, 3, 3]


def test_retries_are_bounded_then_the_sample_fails_and_is_dead_lettered(
    quick_retry_service: Service, redis_url: str, redis_client: redis.Redis
) -> None:
    traces = [{"id": "x", "redis_url": redis_url}]
    handle = quick_retry_service.producer.enqueue_traces(traces, "retry", recipe="rate_limited")
    status = handle.wait(timeout=60)
    assert (status.done, status.failed) == (0, 1)
    assert int(redis_client.get("flaky:x") or 0) == 4  # the first call and 3 retries
    assert "LLMError: rate limited (attempt 4)" in handle.errors()[0]["error"]
    assert redis_client.llen(dead_letters_key("retry")) == 1


def test_more_retries_than_celerys_default_cap_still_end_in_a_recorded_failure(
    redis_client: redis.Redis, redis_url: str
) -> None:
    # Celery caps a task at 3 retries unless told otherwise; the setting must win, and the
    # sample must still be recorded and dead-lettered when it runs out (never silently lost).
    settings = WorkerSettings(
        redis_url=redis_url,
        queue_prefix="retry5",
        task_max_retries=5,
        retry_backoff_seconds=0.005,
        recipes=TEST_RECIPES,
    )
    built = build_service(settings, redis_url=redis_url)
    try:
        with local_workers(built, learn_threads=2):
            handle = built.producer.enqueue_traces(
                [{"id": "y", "redis_url": redis_url}],
                "retry",
                recipe="rate_limited",
            )
            status = handle.wait(timeout=60)
    finally:
        built.close()
    assert (status.done, status.failed) == (0, 1)
    assert int(redis_client.get("flaky:y") or 0) == 6  # the first call and 5 retries
    assert redis_client.llen(dead_letters_key("retry5")) == 1


def test_learn_workers_run_a_step_as_often_at_once_as_they_have_threads(service: Service) -> None:
    # The engine's per-class max_workers limit is for in-process pipelines; on workers the queue's
    # concurrency rules, so SkillManager calls (UpdateStep, max_workers=1) run in parallel.
    traces = [{"id": "a"}, {"id": "b"}]
    handle = service.producer.enqueue_traces(traces, "meet", recipe="meeting")
    status = handle.wait(timeout=60)
    assert (status.done, status.failed) == (2, 0), handle.errors()


def test_a_writer_step_reads_no_skillbook_view_and_a_learning_step_reads_one(
    service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A skillbook writer writes through the store: its step spends no read on a view it never uses."""
    handle = service.producer.enqueue_traces(failure_traces(1), "lean")
    handle.wait(timeout=60)
    (result,) = handle.results()
    assert result.output is not None
    from ace_workers.distributed.worker.payload import context_to_payload

    payload = context_to_payload(result.output, claims=service.runtime.claims)
    _, routes = service.runtime.pipeline("trace_analyser", "lean")
    store = service.runtime.store("lean")
    reads: list[str] = []
    read = store.cached_snapshot
    monkeypatch.setattr(store, "cached_snapshot", lambda *head: reads.append("read") or read(*head))
    kwargs = {"recipe": "trace_analyser", "skillbook": "lean", "batch_id": handle.batch_id, "epoch": 1}
    apply_index = next(r.index for r in routes if r.name == "ApplyStep")
    run_step(service.dispatcher, payload, **kwargs, sample_index=1, index=apply_index)
    assert reads == []
    run_step(service.dispatcher, payload, **kwargs, sample_index=1, index=0)
    assert reads == ["read"]


def test_a_writer_step_that_reads_its_view_sees_the_skillbook(service: Service) -> None:
    store = service.runtime.store("peeked")
    learned = service.producer.enqueue_traces(failure_traces(2, topics=2), "peeked")
    assert learned.wait(timeout=60).done == 2
    contents = sorted(skill.content for skill in store.export().skills())
    assert contents
    peek = service.producer.enqueue_traces(failure_traces(1), "peeked", recipe="peeking_writer")
    assert peek.wait(timeout=60).done == 1
    (result,) = peek.results()
    assert result.output is not None
    assert result.output.metadata["seen"] == contents
