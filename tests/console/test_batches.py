"""The batches API: the counts are status --json's, each step counts every sample, usage is the metrics'."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from typer.testing import CliRunner

from ace_workers.cli import app as cli
from ace_workers.distributed.service import Service
from ace_workers.sim import failure_traces
from tests.console.conftest import LEARNED
from tests.support.console import RunningConsole, running_console
from tests.support.recipes import TEST_RECIPES


@pytest.fixture
def learned(console: RunningConsole) -> dict[str, Any]:
    """The row /api/batches gives the batch that taught ``support``."""
    with console.client() as client:
        (row,) = client.get("/api/batches").json()["recent"]
    return row


def llm_tokens_counted(service: Service, kind: str) -> float:
    """The tokens of ``kind`` (prompt or completion) the workers' metrics counted, all roles and models."""
    return sum(
        sample.value
        for metric in service.runtime.metrics.registry.collect()
        for sample in metric.samples
        if sample.name == "ace_llm_tokens_total" and sample.labels["kind"] == kind
    )


def test_the_recent_batches_list_the_finished_one_with_its_progress(learned: dict[str, Any]) -> None:
    assert (learned["skillbook"], learned["state"]) == (LEARNED, "done")
    assert (learned["finished"], learned["total"], learned["done"]) == (8, 8, 8)


def test_a_finished_batch_is_not_among_the_running_and_the_page_does_not_reload(
    console: RunningConsole,
) -> None:
    with console.client() as client:
        answer = client.get("/api/batches").json()
        page = client.get("/batches").text
    assert answer["running"] == []
    assert answer["refresh_seconds"] is None
    assert "data-refresh-seconds" not in page


def test_the_skillbook_filter_keeps_that_skillbooks_batches_only(
    console: RunningConsole, learned: dict[str, Any]
) -> None:
    with console.client() as client:
        mine = client.get("/api/batches", params={"skillbook": LEARNED}).json()
        other = client.get("/api/batches", params={"skillbook": "other"}).json()
    assert [row["batch_id"] for row in mine["recent"]] == [learned["batch_id"]]
    assert other["recent"] == []


def test_a_bad_skillbook_or_limit_is_a_400_naming_it(console: RunningConsole) -> None:
    with console.client() as client:
        bad_name = client.get("/api/batches", params={"skillbook": "no/slash"})
        bad_limit = client.get("/api/batches", params={"limit": "lots"})
    assert bad_name.status_code == 400
    assert "skillbook=" in bad_name.json()["message"]
    assert bad_limit.status_code == 400
    assert "limit=" in bad_limit.json()["message"]


def test_the_batch_api_gives_the_document_status_json_prints(
    console: RunningConsole,
    fleet: Service,
    learned: dict[str, Any],
    clean_env: pytest.MonkeyPatch,
    redis_url: str,
) -> None:
    clean_env.setenv("ACE_REDIS_URL", redis_url)
    clean_env.setenv("ACE_QUEUE_PREFIX", fleet.runtime.settings.queue_prefix)
    clean_env.setenv("ACE_RECIPES", TEST_RECIPES)
    printed = CliRunner().invoke(cli, ["status", learned["batch_id"], "--json"])
    assert printed.exit_code == 0, printed.output

    with console.client() as client:
        shown = client.get(f"/api/batches/{learned['batch_id']}").json()

    assert shown["status"] == json.loads(printed.stdout)
    assert shown["status"]["write_queue_consumers"]  # the writer is named, as the command names it


def test_each_step_counts_every_sample_once(
    console: RunningConsole, fleet: Service, learned: dict[str, Any]
) -> None:
    with console.client() as client:
        steps = client.get(f"/api/batches/{learned['batch_id']}").json()["steps"]
    _, routes = fleet.runtime.pipeline("trace_analyser", LEARNED)

    assert [step["name"] for step in steps] == [route.name for route in routes]
    assert [(step["done"], step["failed"], step["total"]) for step in steps] == [(8, 0, 8)] * len(routes)
    assert all(step["seconds"] > 0 for step in steps)


def test_the_batch_usage_is_what_the_worker_metrics_counted(
    console: RunningConsole, fleet: Service, learned: dict[str, Any]
) -> None:
    with console.client() as client:
        usage = client.get(f"/api/batches/{learned['batch_id']}").json()["usage"]

    assert usage["prompt_tokens"] == llm_tokens_counted(fleet, "prompt") > 0
    assert usage["completion_tokens"] == llm_tokens_counted(fleet, "completion") > 0
    assert usage["tokens_per_sample"] == pytest.approx(usage["tokens"] / 8)
    assert usage["cost"] is None  # the simulated LLM prices nothing


def test_the_learning_cost_plot_has_a_point_for_the_batch(
    console: RunningConsole, learned: dict[str, Any]
) -> None:
    with console.client() as client:
        answer = client.get("/api/batches").json()
        page = client.get("/batches").text
    (point,) = answer["cost_points"]
    assert point["batch_id"] == learned["batch_id"]
    assert point["tokens_per_sample"] == learned["usage"]["tokens_per_sample"]
    assert 'id="tokens-per-sample"' in page
    assert 'id="cost-per-sample"' not in page  # nothing was priced


def test_an_unknown_batch_is_a_404_naming_it(console: RunningConsole) -> None:
    with console.client() as client:
        answer = client.get("/api/batches/no-such-batch")
    assert answer.status_code == 404
    assert "no batch 'no-such-batch'" in answer.json()["message"]


@pytest.fixture
def idle_console(idle_service: Service) -> Iterator[RunningConsole]:
    with running_console(idle_service) as running:
        yield running


def test_a_batch_nobody_works_on_is_running_all_queued_and_the_page_reloads(
    idle_console: RunningConsole, idle_service: Service
) -> None:
    handle = idle_service.producer.enqueue_traces(failure_traces(3), "waiting")
    with idle_console.client() as client:
        answer = client.get("/api/batches").json()
        page = client.get("/batches").text
        one = client.get(f"/api/batches/{handle.batch_id}").json()

    (row,) = answer["running"]
    assert (row["batch_id"], row["queued"], row["finished"]) == (handle.batch_id, 3, 0)
    assert answer["refresh_seconds"] > 0
    assert f'data-refresh-seconds="{answer["refresh_seconds"]}"' in page
    assert one["steps"] == []  # no step has run
    assert one["status"]["write_queue_consumers"] == []


def test_with_no_batch_the_plot_says_there_is_nothing_yet(idle_console: RunningConsole) -> None:
    with idle_console.client() as client:
        page = client.get("/batches").text
    assert "LLM tokens per finished sample: nothing to plot yet." in page


def test_the_recent_index_skips_a_batch_whose_records_expired(
    console: RunningConsole, learned: dict[str, Any], fleet: Service, redis_client: redis.Redis
) -> None:
    redis_client.delete(*redis_client.keys(f"*{{batch:{learned['batch_id']}}}*"))
    with console.client() as client:
        answer = client.get("/api/batches").json()
    assert answer["recent"] == []
    prefix = fleet.runtime.settings.queue_prefix
    assert redis_client.zcard(f"{prefix}:batches:recent") == 0
