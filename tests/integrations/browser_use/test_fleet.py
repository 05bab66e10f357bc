"""Recorded browser-use runs sent to the fleet: real Redis (db 15), real in-process Celery workers."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import redis

from ace_workers.distributed.service import Service
from ace_workers.distributed.store.keys import SkillbookKeys
from ace_workers.integrations import browser_history_to_trace
from tests.support.browser_agents import failed_zorb_run
from tests.support.workers import running_service


@pytest.fixture
def service(redis_client: redis.Redis, redis_url: str) -> Iterator[Service]:
    """In-process workers for the three queues on the test Redis."""
    with running_service(redis_url) as built:
        yield built


def test_workers_learn_from_an_agent_history_list_sent_as_a_trace(service: Service) -> None:
    handle = service.producer.enqueue_traces([failed_zorb_run()], "browser")
    status = handle.wait(timeout=60)
    assert (status.done, status.failed) == (1, 0)
    book = service.runtime.store("browser").export()
    assert [s.section for s in book.skills()] == ["zorb"]


def test_the_history_goes_over_the_wire_as_its_trace_dict(service: Service) -> None:
    handle = service.producer.enqueue_traces([failed_zorb_run()], "browser")
    handle.wait(timeout=60)
    (result,) = handle.results()
    assert result.output is not None
    assert result.output.trace["question"] == "Solve the zorb puzzle. Input: 1234"


def test_an_agent_history_list_waits_in_the_nightly_inbox_as_its_trace_dict(service: Service) -> None:
    run = failed_zorb_run()
    assert service.producer.append_to_inbox([run], "browser") == 1
    keys = SkillbookKeys("browser", service.runtime.settings.queue_prefix)
    ((_, fields),) = service.runtime.redis.xrange(keys.inbox)
    assert json.loads(fields[b"trace"]) == browser_history_to_trace(run)
