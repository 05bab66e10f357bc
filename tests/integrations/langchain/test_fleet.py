"""AceCallbackHandler: a LangChain app's runs go to real workers as traces; a Redis outage breaks nothing."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import redis

from ace_workers.distributed.producer import Producer
from ace_workers.distributed.settings import WorkerSettings
from ace_workers.distributed.worker.payload import payload_to_context
from ace_workers.sim import make_tasks
from tests.support.docs import run_example, runnable_blocks
from tests.support.langchain_agents import replies, scripted
from tests.support.servers import PrivateRedis
from tests.support.waiting import wait_for
from tests.support.workers import running_service

if TYPE_CHECKING:
    from langchain_core.runnables import Runnable

# langchain_core, and AceCallbackHandler (a subclass of its handler), are imported in the tests
# that use them, so that collecting this module in every xdist worker stays cheap.

# The LangChain page's example of the callback handler feeding the fleet.
(FLEET_EXAMPLE,) = runnable_blocks("docs/integrations/langchain.md", "## On the fleet")


def chain_answering(answer: str) -> Runnable[Any, Any]:
    from langchain_core.prompts import ChatPromptTemplate

    return ChatPromptTemplate.from_template("{input}") | scripted(*replies(answer))


def test_each_top_level_run_becomes_one_trace_the_workers_learn_from(
    redis_client: redis.Redis, redis_url: str
) -> None:
    from ace_workers.integrations.langchain import AceCallbackHandler

    tasks = [sample.question for sample in make_tasks(2, topics=1)]  # zorb puzzles
    with running_service(redis_url) as service:
        with AceCallbackHandler(service.producer, "chains") as handler:
            chain = chain_answering("no idea")
            answers = [
                chain.invoke({"input": task}, config={"callbacks": [handler]}).content for task in tasks
            ]
        assert answers == ["no idea", "no idea"]
        # The prompt and the model inside each invoke are part of its run, not runs of their own.
        assert (handler.stats.runs, handler.stats.sent, handler.pending) == (2, 2, 0)
        assert sum(handle.wait(timeout=60).done for handle in handler.handles) == 2
        traces = [result.output.trace for handle in handler.handles for result in handle.results()]
        skills = service.runtime.store("chains").export().skills()
    assert sorted(trace["question"] for trace in traces) == sorted(tasks)
    assert {trace["answer"] for trace in traces} == {"no idea"}
    assert [skill.section for skill in skills] == ["zorb"]


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[PrivateRedis]:
    """A redis-server of this test's own, to stop and start again on the same port."""
    with PrivateRedis(tmp_path / "redis", persistent=False) as server:
        yield server


def test_a_redis_outage_never_breaks_the_chain_and_the_kept_traces_go_out_after(
    private_redis: PrivateRedis,
) -> None:
    from ace_workers.integrations.langchain import AceCallbackHandler

    producer = Producer(WorkerSettings(redis_url=private_redis.url))
    handler = AceCallbackHandler(producer, "chains", max_pending=2, retry_seconds=60)
    try:
        chain = chain_answering("42")
        private_redis.stop()
        answers = [
            chain.invoke({"input": f"task {n}"}, config={"callbacks": [handler]}).content for n in range(3)
        ]
        assert answers == ["42", "42", "42"]
        assert handler.flush() is False  # Redis is still down
        stats = handler.stats
        assert (stats.runs, stats.sent, stats.dropped, handler.pending) == (3, 0, 1, 2)
        assert stats.failed_sends >= 1  # this flush, and the sender thread if it tried first
        private_redis.start()
        assert handler.flush() is True
        assert (handler.stats.sent, handler.pending) == (2, 0)
        (handle,) = handler.handles
        stored = [
            payload_to_context(item, skillbook=None, claims=producer.runtime.claims).trace
            for item in producer.runtime.batches.items(handle.batch_id)
        ]
        assert handle.status().total == 2
        assert [trace["question"] for trace in stored] == ["task 1", "task 2"]  # the oldest was dropped
    finally:
        handler.close()
        producer.close()


def test_a_send_that_failed_after_its_batch_was_stored_is_finished_not_sent_again(
    redis_client: redis.Redis, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ace_workers.integrations.langchain import AceCallbackHandler

    producer = Producer(WorkerSettings(redis_url=redis_url))
    try:
        handler = AceCallbackHandler(producer, "chains", retry_seconds=60)

        def connection_lost(*args: object, **kwargs: object) -> int:
            raise redis.ConnectionError("connection lost while sending")

        # The producer stores a batch's inputs before it sends them: fail the sending.
        monkeypatch.setattr("ace_workers.distributed.producer.producer.enqueue_epoch", connection_lost)
        # With admission on (the default) the producer sends through the admission sender.
        monkeypatch.setattr("ace_workers.distributed.worker.epochs.enqueue_epoch", connection_lost)
        chain_answering("42").invoke({"input": "task"}, config={"callbacks": [handler]})
        wait_for(lambda: handler.stats.failed_sends, 10, "the sender thread's send to fail", every=0.01)
        assert (handler.stats.failed_sends, handler.pending) == (1, 1)
        monkeypatch.undo()
        assert handler.flush() is True
        (handle,) = handler.handles
        status = handle.status()
        assert (status.total, status.enqueued) == (1, 1)
        assert len(producer.runtime.batches.items(handle.batch_id)) == 1
        assert len(list(redis_client.scan_iter(match="*{batch:*}:items"))) == 1  # no second batch
        assert (handler.stats.sent, handler.stats.batches, handler.pending) == (1, 1, 0)
        handler.close()
    finally:
        producer.close()


def test_the_docs_fleet_example_sends_its_run_to_the_redis_it_is_pointed_at(
    redis_client: redis.Redis, redis_url: str, tmp_path: Path
) -> None:
    done = run_example(FLEET_EXAMPLE, tmp_path, ACE_REDIS_URL=redis_url)
    assert done.returncode == 0, done.stderr
    assert "runs=1, sent=1, batches=1, failed_sends=0, dropped=0, refused=0" in done.stdout
    (items,) = redis_client.scan_iter(match="*{batch:*}:items")
    (payload,) = redis_client.lrange(items, 0, -1)
    assert "Solve the zorb puzzle. Input: 1234" in payload.decode()


def test_the_chain_does_not_wait_for_a_send_that_hangs(redis_client: redis.Redis, redis_url: str) -> None:
    from ace_workers.integrations.langchain import AceCallbackHandler

    producer = Producer(WorkerSettings(redis_url=redis_url))
    entered, released = threading.Event(), threading.Event()
    enqueue = producer.enqueue_traces

    def hanging(*args: Any, **kwargs: Any) -> Any:
        entered.set()
        assert released.wait(30)
        return enqueue(*args, **kwargs)

    producer.enqueue_traces = hanging  # type: ignore[method-assign]
    try:
        handler = AceCallbackHandler(producer, "chains")
        answer = chain_answering("42").invoke({"input": "task"}, config={"callbacks": [handler]}).content
        assert entered.wait(10)
        # The chain has its answer while its trace is still being sent.
        assert (answer, handler.pending, handler.stats.sent) == ("42", 1, 0)
        released.set()
        assert handler.close() is True
        assert (handler.stats.sent, handler.pending) == (1, 0)
    finally:
        released.set()
        producer.close()


def test_a_handler_on_a_label_serves_its_version_and_its_traces_say_so(
    redis_client: redis.Redis, redis_url: str
) -> None:
    from ace_workers.core import Skillbook
    from ace_workers.integrations.langchain import AceCallbackHandler
    from ace_workers.traces.skillbook_context import inject_skillbook_context

    (task,) = [sample.question for sample in make_tasks(1, topics=1)]
    with running_service(redis_url) as service:
        store = service.runtime.store("chains")
        book = Skillbook()
        book.add_skill("general", "Answer politely.")
        prod = store.import_skillbook(book)
        store.labels.set("prod", prod, actor="user:test")
        with AceCallbackHandler(service.producer, "chains@prod") as handler:
            served = handler.served_skillbook()
            assert "Answer politely." in inject_skillbook_context(task, served.view)  # for the app's prompt
            chain_answering("no idea").invoke({"input": task}, config={"callbacks": [handler]})
        (handle,) = handler.handles
        assert handle.wait(timeout=60).done == 1
        (result,) = handle.results()
        assert result.output is not None
        trace = result.output.trace
        assert isinstance(trace, dict)
        assert (trace["served_version"], trace["served_label"]) == (prod, "prod")
        assert handle.status().skillbook == "chains"  # learned into the head
        assert store.version() > prod
        assert store.labels.get("prod") == prod
