"""The fleet API and page: the in-process workers and their queues, queue depths, lag, write partitions."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ace_workers.distributed.service import Service
from ace_workers.distributed.worker.partitions import check_partition_count
from ace_workers.sim import failure_traces
from tests.console.conftest import LEARNED
from tests.support.cdp import headless_chromium
from tests.support.console import SCREENSHOTS, RunningConsole, running_console


@pytest.fixture
def fleet_view(console: RunningConsole) -> dict[str, Any]:
    with console.client() as client:
        answer = client.get("/api/fleet")
    assert answer.status_code == 200, answer.text
    view: dict[str, Any] = answer.json()
    return view


def test_the_workers_are_those_that_consume_the_queues(fleet_view: dict[str, Any], fleet: Service) -> None:
    settings = fleet.runtime.settings
    asked = fleet.dispatcher.queue_consumers(settings.all_queues(), settings.worker_reply_seconds)
    workers = {worker["name"]: worker["queues"] for worker in fleet_view["workers"]}

    assert sorted(workers) == sorted({name for names in asked.values() for name in names})
    for queue, names in asked.items():
        assert all(queue in workers[name] for name in names), queue


def test_each_worker_answered_and_has_a_fresh_record(fleet_view: dict[str, Any]) -> None:
    assert fleet_view["workers"]
    assert all(worker["answered_inspect"] for worker in fleet_view["workers"])
    assert all(worker["record_fresh"] for worker in fleet_view["workers"])


def test_every_queue_is_listed_with_its_depth_and_consumers(
    fleet_view: dict[str, Any], fleet: Service
) -> None:
    queues = {queue["name"]: queue for queue in fleet_view["queues"]}
    assert sorted(queues) == sorted(fleet.runtime.settings.all_queues())
    assert all(queue["depth"] == 0 for queue in queues.values())  # the batch has finished
    assert all(queue["consumers"] for queue in queues.values())


def test_each_worker_shows_the_tasks_it_has_done(fleet_view: dict[str, Any], console: RunningConsole) -> None:
    done = {worker["name"]: worker["tasks_done"] for worker in fleet_view["workers"]}
    assert None not in done.values(), done  # every worker answered Celery's stats
    # 8 traces, each a chain of several step tasks, spread over the workers.
    assert sum(done.values()) >= 8 * 2
    by_task = [task for worker in fleet_view["workers"] for task in worker["tasks_done_by_task"]]
    assert by_task, fleet_view["workers"]
    with console.client() as client:
        page = client.get("/fleet").text
    for name, count in done.items():
        row = page[page.index(f'data-worker="{name}"') :]
        assert 'class="num tasks-done"' in row.split("</tr>", 1)[0]
        assert f">{count:,}</td>" in row.split("</tr>", 1)[0]


def test_the_write_partition_names_its_writer_and_skillbooks(
    fleet_view: dict[str, Any], fleet: Service
) -> None:
    partitions = fleet_view["partitions"]
    assert partitions["configured"] == 1
    assert partitions["recorded"] is None  # in-process workers record no count; a started worker does
    (write,) = partitions["queues"]
    assert write["queue"] == fleet.runtime.settings.write_queue(LEARNED)
    assert write["skillbooks"] == [LEARNED]
    assert len(write["consumers"]) == 1  # one writer per write queue


def test_the_count_the_workers_recorded_is_shown(console: RunningConsole, fleet: Service) -> None:
    check_partition_count(fleet.dispatcher)  # as a writer starting
    with console.client() as client:
        partitions = client.get("/api/fleet").json()["partitions"]
    assert partitions["recorded"] == 1


def test_a_finished_batch_does_not_lag(fleet_view: dict[str, Any]) -> None:
    assert fleet_view["lag"] == []  # the learned batch finished, though still in the running set


def test_the_broadcast_is_asked_once_in_a_few_seconds(console: RunningConsole) -> None:
    with console.client() as client:
        first = client.get("/api/fleet").json()["inspect"]
        second = client.get("/api/fleet").json()["inspect"]
    assert second["asked_at"] == first["asked_at"]


@pytest.fixture
def idle_console(idle_service: Service) -> Iterator[RunningConsole]:
    with running_console(idle_service) as running:
        yield running


def test_without_workers_the_queues_hold_the_batch_and_it_lags(
    idle_console: RunningConsole, idle_service: Service
) -> None:
    handle = idle_service.producer.enqueue_traces(failure_traces(3), "waiting")
    with idle_console.client() as client:
        view = client.get("/api/fleet").json()

    assert view["workers"] == []
    depths = {queue["name"]: queue["depth"] for queue in view["queues"]}
    assert sum(depths.values()) == 3
    assert all(queue["consumers"] == [] for queue in view["queues"])
    (lag,) = view["lag"]
    assert (lag["batch_id"], lag["queued"]) == (handle.batch_id, 3)
    assert lag["oldest_wait_seconds"] >= 0


@pytest.mark.slow
@pytest.mark.browser
def test_the_fleet_page_shows_the_workers_queues_and_partitions(
    console: RunningConsole, fleet: Service, tmp_path: Path
) -> None:
    with headless_chromium(tmp_path / "profile", headers=console.basic_auth_header()) as page:
        page.goto(f"{console.url}/fleet")
        assert page.count("#workers tr[data-worker]") >= 2  # the execute+learn worker and the writer
        assert page.count("#queues tr[data-queue]") == len(fleet.runtime.settings.all_queues())
        assert LEARNED in page.text("#partitions")
        assert "nobody" not in page.text("#queues")
        page.screenshot(SCREENSHOTS / "fleet.png")
