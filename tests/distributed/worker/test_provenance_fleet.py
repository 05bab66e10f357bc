"""Provenance on the fleet: skills learned by a batch on real workers say where they came from.

Each skill records its batch, sample, trace id, recipe, the Reflector's insight and
the actor; ``skill_history`` shows the trace itself from the batch ledger; export and
import keep all of it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from ace_workers.core import Skillbook
from ace_workers.distributed.service import Service
from ace_workers.distributed.store.provenance_reader import FOUND, skill_history
from ace_workers.sim import failure_traces, make_tasks
from tests.support.workers import running_service

SAMPLES = 10


@pytest.fixture
def service(redis_client: redis.Redis, redis_url: str) -> Iterator[Service]:
    """In-process workers for all three queues on the test Redis (flushed around the test)."""
    with running_service(redis_url) as built:
        yield built


def _traces() -> list[dict[str, Any]]:
    """Simulated failure traces, each named by its producer's own trace id."""
    return [{**trace, "trace_id": f"t-{number}"} for number, trace in enumerate(failure_traces(SAMPLES), 1)]


def test_skills_learned_by_a_batch_record_where_they_came_from_and_why_shows_the_trace(
    service: Service,
) -> None:
    traces = _traces()
    handle = service.producer.enqueue_traces(traces, "prov")
    status = handle.wait(timeout=60)
    assert (status.done, status.failed) == (SAMPLES, 0)
    store = service.runtime.store("prov")
    book = store.export()
    assert len(book) == 5  # one rule per topic
    for skill in book.skills():
        origin = skill.occurrences[0]
        assert origin["operation_type"] == "ADD"
        assert origin["actor"] == "skill_manager"
        assert origin["batch_id"] == handle.batch_id
        assert origin["recipe"] == "trace_analyser"
        assert origin["epoch"] == 1
        # The sample it came from, by its index in the batch and by the producer's trace id.
        assert origin["trace_id"] == traces[origin["sample_index"] - 1]["trace_id"]
        assert origin["insight"]  # the Reflector's key insight
        assert skill.occurrence_totals["ADD"] == 1

        history = skill_history(store, skill.id, batches=service.runtime.batches)
        assert history.state == "active"
        assert history.occurrences[0].status == FOUND
        assert history.occurrences[0].trace == traces[origin["sample_index"] - 1]
        [added] = [change for change in history.changes if change.before.get(skill.id) is None]
        assert [op.type for op in added.operations if op.content == skill.content] == ["ADD"]
        assert added.source is not None and added.source["batch"] == handle.batch_id


def test_export_and_import_keep_provenance(service: Service, tmp_path: Path) -> None:
    handle = service.producer.enqueue_traces(_traces(), "prov")
    assert handle.wait(timeout=60).done == SAMPLES
    exported = service.runtime.store("prov").export()
    path = tmp_path / "prov.json"
    exported.save_to_file(path)
    copy = service.runtime.store("copy")
    copy.import_skillbook(Skillbook.load_from_file(path))
    reimported = copy.export()

    def provenance(book: Skillbook) -> dict[str, tuple[list[dict[str, Any]], dict[str, int]]]:
        return {s.id: (s.occurrences, s.occurrence_totals) for s in book.skills(include_invalid=True)}

    assert provenance(reimported) == provenance(exported)
    assert all(occurrences for occurrences, _ in provenance(reimported).values())
    # The copy's history still finds each trace: the occurrences name the batch that taught it.
    skill = reimported.skills()[0]
    history = skill_history(copy, skill.id, batches=service.runtime.batches)
    assert history.occurrences[0].status == FOUND


def test_tags_on_the_fleet_record_the_reflector_and_stay_bounded(
    redis_client: redis.Redis, redis_url: str
) -> None:
    with running_service(redis_url, provenance_keep=3) as built:
        handle = built.producer.enqueue_samples(make_tasks(15, seed=5, topics=5), "tagged", epochs=3)
        assert handle.wait(timeout=120).done == 45
        book = built.runtime.store("tagged").export()
    tagged = [s for s in book.skills() if s.occurrence_totals.get("TAG", 0) > 2]
    assert tagged  # later epochs cite the rules learned in the first, and the Reflector tags them
    for skill in tagged:
        assert len(skill.occurrences) == 3  # ACE_PROVENANCE_KEEP: the origin and the newest two
        assert skill.occurrences[0]["operation_type"] == "ADD"
        tags = [o for o in skill.occurrences if o["operation_type"] == "TAG"]
        assert {o["actor"] for o in tags} == {"reflector"}
        assert {o["batch_id"] for o in tags} == {handle.batch_id}
        assert {o["recipe"] for o in tags} == {"ace"}
        assert max(o["epoch"] for o in tags) > 1
