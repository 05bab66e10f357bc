"""Readers outside the fleet read a label: load_served_skillbook for ACELiteLLM or a runner, and the
DistributedRunner given ``NAME@LABEL``. Real Redis, real in-process workers, the simulated LLM."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from ace_workers.core import Skillbook
from ace_workers.distributed.producer.distributed_runner import DistributedRunner
from ace_workers.distributed.readers import load_served_skillbook
from ace_workers.distributed.service import Service
from ace_workers.distributed.store.errors import UnknownLabelError
from ace_workers.runners import ACELiteLLM
from ace_workers.sim import make_tasks
from tests.support.operations import add, batch
from tests.support.workers import running_service


@pytest.fixture
def service(redis_client: redis.Redis, redis_url: str) -> Iterator[Service]:
    """Workers; skillbook "book": prod at version 1 (one skill), the head two versions on (three)."""
    with running_service(redis_url) as built:
        store = built.runtime.store("book")
        book = Skillbook()
        book.add_skill("general", "Answer politely.")
        store.labels.set("prod", store.import_skillbook(book), actor="user:test")
        store.apply(batch(add("Check units.", "math")))
        store.apply(batch(add("Estimate first.", "math")))
        yield built


def test_a_reader_of_a_label_gets_its_version_and_says_so_in_its_traces(service: Service) -> None:
    settings = service.runtime.settings
    served = load_served_skillbook("book@prod", settings)
    assert (served.name, served.label, served.version) == ("book", "prod", 1)
    assert [skill.content for skill in served.skillbook().skills()] == ["Answer politely."]
    assert served.trace_fields() == {"served_version": 1, "served_label": "prod"}
    head = load_served_skillbook("book", settings)
    assert (head.label, head.version, len(head.view)) == (None, 3, 3)
    agent = ACELiteLLM.from_model("sim", skillbook=served.skillbook())
    agent.ask("What is 2+2?")
    assert len(agent.skillbook) == 1


def test_the_serve_label_setting_is_the_default_label_of_a_name_without_one(service: Service) -> None:
    from dataclasses import replace

    settings = replace(service.runtime.settings, serve_label="prod")
    assert load_served_skillbook("book", settings).version == 1
    with pytest.raises(UnknownLabelError, match="has no label 'beta' \\(its labels: prod\\)"):
        load_served_skillbook("book@beta", settings)


def test_a_distributed_runner_on_a_label_is_served_it_and_learns_into_the_head(service: Service) -> None:
    runner = DistributedRunner(service.producer, skillbook="book@prod", recipe="ace")
    results = runner.run(make_tasks(6, seed=2, topics=2), timeout=120)
    assert all(r.ok for r in results)
    served = {
        (r.output.metadata["served_version"], r.output.metadata["served_label"]) for r in results if r.output
    }
    assert served == {(1, "prod")}
    assert service.runtime.store("book").version() > 3  # learning wrote the head
    assert runner.last_batch is not None
    assert runner.last_batch.status().skillbook == "book"
