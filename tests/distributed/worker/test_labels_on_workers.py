"""Labelled versions on the fleet: a batch served by ``book@prod`` reads prod while learning moves the
head; a canary share splits samples deterministically; every result says what served it; the live
A/B counters add up to what the results show. Real Redis, real in-process workers, simulated LLM.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from ace_workers.core import ACEStepContext, Skillbook
from ace_workers.distributed.producer.producer import BatchHandle
from ace_workers.distributed.service import Service
from ace_workers.distributed.store.errors import UnknownLabelError
from ace_workers.distributed.store.outcomes import compare_labels, read_outcomes
from ace_workers.distributed.worker.chains import STEP_TASK
from ace_workers.distributed.worker.payload import context_to_payload
from ace_workers.distributed.worker.serving import CANARY, SERVE_LABEL, canary_draw
from ace_workers.sim import make_tasks
from tests.support.crafted import create_one_sample_batch, first_step_kwargs
from tests.support.tracing import memory_spans, named
from tests.support.waiting import wait_for
from tests.support.workers import running_service


@pytest.fixture
def service(redis_client: redis.Redis, redis_url: str) -> Iterator[Service]:
    with running_service(redis_url) as built:
        yield built


def seeded_book(service: Service, name: str = "book") -> int:
    """Skillbook ``name`` holding one skill no task needs, as version 1; label prod on it."""
    book = Skillbook()
    book.add_skill("general", "Answer politely.")
    store = service.runtime.store(name)
    version = store.import_skillbook(book)
    store.labels.set("prod", version, actor="user:test")
    return version


def learned_version(service: Service, name: str = "book") -> int:
    """Learn the tasks' rules into the head of ``name`` (3 epochs); the head's version after."""
    handle = service.producer.enqueue_samples(make_tasks(15, seed=5, topics=5), name, epochs=3)
    status = handle.wait(timeout=120)
    assert status.failed == 0
    return service.runtime.store(name).version()


def outputs(handle: BatchHandle) -> list[ACEStepContext]:
    """The batch's finished contexts, once it finished; every sample must have succeeded."""
    handle.wait(timeout=120)
    results = handle.results()
    assert all(r.ok for r in results), [r.error for r in results if not r.ok]
    return [r.output for r in results if r.output is not None]


def correct(ctx: ACEStepContext) -> bool:
    assert ctx.agent_output is not None and ctx.sample is not None
    return ctx.agent_output.final_answer == ctx.sample.ground_truth


def test_a_batch_served_by_a_label_reads_its_version_while_learning_moves_the_head(
    service: Service,
) -> None:
    prod = seeded_book(service)
    handle = service.producer.enqueue_samples(make_tasks(15, seed=5, topics=5), "book@prod", epochs=3)
    contexts = outputs(handle)
    assert len(contexts) == 45
    assert {(c.metadata["served_version"], c.metadata["served_label"]) for c in contexts} == {(prod, "prod")}
    # The trace the Reflector read says so too.
    assert {(c.trace["served_version"], c.trace["served_label"]) for c in contexts} == {(prod, "prod")}  # type: ignore[index]
    # Prod knows none of the rules: the agent cites none, and never learns to answer, in any epoch...
    assert all(c.agent_output is not None and c.agent_output.skill_ids == [] for c in contexts)
    assert not any(correct(c) for c in contexts if c.epoch == 3)
    # ...while the head learned them from the same batch, and prod stays where it was.
    store = service.runtime.store("book")
    assert store.version() > prod
    assert len(store.export().skills()) > 1
    assert store.labels.get("prod") == prod


def test_the_agent_steps_span_names_the_version_and_label_that_served_it(
    redis_client: redis.Redis, redis_url: str
) -> None:
    with memory_spans() as spans, running_service(redis_url) as service:
        prod = seeded_book(service)
        handle = service.producer.enqueue_samples(make_tasks(2, seed=5), "book@prod")
        assert handle.wait(timeout=120).done == 2
        # A task ends its step's span after it recorded the step.
        wait_for(
            lambda: len(named(list(spans.get_finished_spans()), "ace.step AgentStep")) >= 2,
            60,
            "two AgentStep spans",
            every=0.05,
        )
        agent_spans = named(list(spans.get_finished_spans()), "ace.step AgentStep")
    assert [(span.attributes or {}).get("ace.served.version") for span in agent_spans] == [prod, prod]
    assert [(span.attributes or {}).get("ace.served.label") for span in agent_spans] == ["prod", "prod"]


def test_the_same_batch_served_by_the_head_learns_to_answer(service: Service) -> None:
    seeded_book(service)
    handle = service.producer.enqueue_samples(make_tasks(15, seed=5, topics=5), "book", epochs=3)
    contexts = outputs(handle)
    assert {c.metadata["served_label"] for c in contexts} == {None}
    assert all(correct(c) for c in contexts if c.epoch == 3)
    # Served the head as it moved: the last epoch read versions the batch itself wrote.
    assert min(c.metadata["served_version"] for c in contexts if c.epoch == 3) > 1


def test_a_canary_share_splits_the_samples_by_batch_and_index_the_same_in_every_epoch(
    service: Service,
) -> None:
    prod = seeded_book(service)
    canary = learned_version(service)
    service.runtime.store("book").labels.set(CANARY, canary, actor="user:test")
    handle = service.producer.enqueue_samples(
        make_tasks(40, seed=7, topics=5), "book@prod", epochs=2, canary=0.25
    )
    contexts = outputs(handle)
    expected = {i: CANARY if canary_draw(handle.batch_id, i) < 0.25 else "prod" for i in range(1, 41)}
    assert 0 < list(expected.values()).count(CANARY) < 40  # both labels served some
    for ctx in contexts:
        label = expected[ctx.step_index]  # the sample's index in its epoch
        assert ctx.metadata["served_label"] == label
        assert ctx.metadata["served_version"] == (canary if label == CANARY else prod)
    # A redelivered or re-sent sample is built from the batch's stored input: it asks the same.
    stored = list(service.runtime.batches.iter_items(handle.batch_id))
    labels = [item["metadata"].get(SERVE_LABEL) for item in stored]
    assert labels == [expected[i] for i in range(1, 41)]


def test_the_live_counters_match_the_results_and_compare_finds_the_better_label(service: Service) -> None:
    prod = seeded_book(service)
    good = learned_version(service)
    store = service.runtime.store("book")
    before = read_outcomes(service.runtime.redis, store.keys)
    store.labels.set("prod", good, actor="user:test")
    store.labels.set(CANARY, prod, actor="user:test")  # the canary is the old, ignorant version
    handle = service.producer.enqueue_samples(make_tasks(40, seed=7, topics=5), "book@prod", canary=0.3)
    contexts = outputs(handle)
    # A sample is counted for its label in the round trip after its result is recorded (the
    # counters live in the skillbook's hash slot, the result in the batch's): the last one may
    # trail the batch's end by that round trip.
    wait_for(
        lambda: (
            sum(o.served for o in read_outcomes(service.runtime.redis, store.keys).values())
            == 45 + len(contexts)
        ),
        5,
        "the last sample's label count",
    )
    after = read_outcomes(service.runtime.redis, store.keys)
    for label in ("prod", CANARY):
        served = [c for c in contexts if c.metadata["served_label"] == label]
        assert after[label].served == len(served)
        assert after[label].success == sum(correct(c) for c in served)
        assert after[label].failure == sum(not correct(c) for c in served)
    # The learning batch was served by the head: 45 executions, counted under "head".
    assert before["head"].served == 45
    assert after["head"].served == 45
    comparison = compare_labels(service.runtime.redis, store.keys, "prod", CANARY)
    assert comparison.a.success_rate == 1.0
    assert comparison.b.success_rate == 0.0
    assert not comparison.overlap
    assert comparison.better == "prod"


def test_a_label_the_skillbook_lacks_is_refused_before_anything_is_sent(service: Service) -> None:
    seeded_book(service)
    with pytest.raises(UnknownLabelError, match="has no label 'beta' \\(its labels: prod\\)"):
        service.producer.enqueue_samples(make_tasks(2, seed=1), "book@beta")
    with pytest.raises(UnknownLabelError, match="no label 'canary'"):
        service.producer.enqueue_samples(make_tasks(2, seed=1), "book@prod", canary=0.5)
    with pytest.raises(ValueError, match="recipe 'trace_analyser' runs no agent step"):
        service.producer.enqueue_traces([{"question": "q", "answer": "a"}], "book@prod")


def agent_step_failure(service: Service, metadata: dict[str, Any]) -> str:
    """Send the ace recipe's agent step for one sample with ``metadata``; the sample's error."""
    batch_id = uuid.uuid4().hex
    create_one_sample_batch(service, batch_id)
    (sample,) = make_tasks(1, seed=3)
    payload = context_to_payload(ACEStepContext(sample=sample, metadata=metadata))
    service.app.send_task(
        STEP_TASK,
        args=[payload],
        kwargs=first_step_kwargs("ace", batch_id),
        queue=service.runtime.queue("execute"),
    )
    handle = BatchHandle(batch_id, service.runtime)
    assert handle.wait(timeout=30).failed == 1
    error: str = handle.errors()[0]["error"]
    return error


def test_a_bad_label_in_a_message_fails_its_sample_naming_it(
    service: Service, redis_client: redis.Redis
) -> None:
    seeded_book(service)
    error = agent_step_failure(service, {SERVE_LABEL: "x}:labels"})
    assert error.startswith("PayloadError: metadata['serve_label']: invalid label 'x}:labels'")
    error = agent_step_failure(service, {SERVE_LABEL: ["prod"]})
    assert error.startswith("PayloadError: metadata['serve_label']: invalid label ['prod']")
    error = agent_step_failure(service, {SERVE_LABEL: "beta"})
    assert error == "UnknownLabelError: skillbook 'book' has no label 'beta' (its labels: prod)"


def test_the_settings_give_the_label_and_the_canary_share_of_a_name_without_a_label(
    redis_client: redis.Redis, redis_url: str
) -> None:
    with running_service(redis_url, serve_label="prod", canary_share=1.0) as service:
        prod = seeded_book(service)
        service.runtime.store("book").labels.set(CANARY, prod, actor="user:test")
        contexts = outputs(service.producer.enqueue_samples(make_tasks(3, seed=2), "book"))
        assert {c.metadata["served_label"] for c in contexts} == {CANARY}
        # Named outright, the share wins over the setting; traces recorded elsewhere ignore both.
        contexts = outputs(service.producer.enqueue_samples(make_tasks(3, seed=2), "book@prod", canary=0))
        assert {c.metadata["served_label"] for c in contexts} == {"prod"}
        handle = service.producer.enqueue_traces([{"question": "q", "answer": "a"}], "book")
        assert handle.wait(timeout=60).done == 1
