"""The evaluations page: accuracy per version, live A/B per label, skills over versions; data and plots."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from ace_workers.core import UpdateBatch, UpdateOperation
from ace_workers.distributed.ops.evaluation import (
    EvaluationReport,
    evaluate_versions,
    fleet_agent,
    fleet_redactor,
    read_task_file,
    resolve_targets,
)
from ace_workers.distributed.service import Service
from ace_workers.distributed.store.outcomes import read_outcomes, wilson_interval
from ace_workers.sim import TOPICS, make_tasks
from tests.support.cdp import headless_chromium
from tests.support.console import SCREENSHOTS, RunningConsole

BOOK = "support"  # the fleet fixture's skillbook
PAGE = f"/skillbooks/{BOOK}/evaluations"


def task_file(path: Path, n: int, seed: int, topics: int | list[Any]) -> Path:
    path.write_text(
        "".join(
            json.dumps({"question": t.question, "ground_truth": t.ground_truth}) + "\n"
            for t in make_tasks(n, seed=seed, topics=topics)
        )
    )
    return path


@pytest.fixture
def evaluated(fleet: Service, tmp_path: Path) -> list[EvaluationReport]:
    """Three evaluations of ``support`` (two task sets; prod at 2, canary at the head), oldest first."""
    store = fleet.runtime.store(BOOK)
    head = store.version()
    store.labels.set("prod", 2, actor="user:test")
    store.labels.set("canary", head, actor="user:test")
    zorb = read_task_file(task_file(tmp_path / "zorb.jsonl", 4, 1, [TOPICS[0]]))
    mixed = read_task_file(task_file(tmp_path / "mixed.jsonl", 6, 2, 3))
    agent = fleet_agent(fleet.runtime, BOOK)
    redactor = fleet_redactor(fleet.runtime, BOOK)
    runs = [(zorb, [1, 4], ["prod"]), (mixed, [2, head], ["canary"]), (zorb, [head], [])]
    return [
        evaluate_versions(
            store, resolve_targets(store, versions, labels), tasks, agent, actor="user:ann", redactor=redactor
        )
        for tasks, versions, labels in runs
    ]


def svg_points(html: str, chart_id: str) -> int:
    """The points drawn in the SVG chart ``chart_id`` of a page."""
    found = re.search(rf'<svg id="{chart_id}".*?</svg>', html, re.DOTALL)
    assert found is not None, f"no chart {chart_id} on the page"
    return found.group(0).count('class="point"')


def expected_accuracy(reports: list[EvaluationReport], key: str) -> dict[str, dict[int, float]]:
    """Accuracy by series and version, the newest report winning, from the reports as run."""
    series: dict[str, dict[int, float]] = {}
    for report in reports:  # oldest first: a later report overwrites
        for score in report.scores:
            name = Path(report.tasks["file"]).name if key == "tasks" else score.label or "-"
            series.setdefault(name, {})[score.version] = score.accuracy
    return series


# -- accuracy per version ------------------------------------------------------------------------


def test_accuracy_per_task_set_is_the_newest_score_of_each_version(
    evaluated: list[EvaluationReport], console: RunningConsole
) -> None:
    with console.client() as client:
        accuracy = client.get(f"/api{PAGE}").json()["accuracy"]
    got = {
        series["name"].split(" ")[0]: {int(v): a for v, a in series["points"]}
        for series in accuracy["series"]
    }
    assert got == expected_accuracy(evaluated, "tasks")


def test_accuracy_by_label_has_a_line_per_label(
    evaluated: list[EvaluationReport], console: RunningConsole
) -> None:
    with console.client() as client:
        accuracy = client.get(f"/api{PAGE}", params={"by": "label"}).json()["accuracy"]
    got = {series["name"]: {int(v): a for v, a in series["points"]} for series in accuracy["series"]}
    expected = expected_accuracy(evaluated, "label")
    assert got["prod"] == expected["prod"]
    assert got["canary"] == expected["canary"]


def test_the_accuracy_table_has_a_row_per_version_of_each_report(
    evaluated: list[EvaluationReport], console: RunningConsole
) -> None:
    with console.client() as client:
        rows = client.get(f"/api{PAGE}").json()["accuracy"]["rows"]
    expected = [
        (report.id, score.name, score.version, score.accuracy)
        for report in reversed(evaluated)
        for score in report.scores
    ]
    assert [(r["report"], r["name"], r["version"], r["accuracy"]) for r in rows] == expected


def test_the_accuracy_plot_draws_one_point_per_data_point(
    evaluated: list[EvaluationReport], console: RunningConsole
) -> None:
    with console.client() as client:
        accuracy = client.get(f"/api{PAGE}").json()["accuracy"]
        html = client.get(PAGE).text
    # zorb's tasks at versions 1, 2 (prod), 4 and the head; the mixed tasks at 2 and the head
    assert svg_points(html, "accuracy-chart") == sum(len(s["points"]) for s in accuracy["series"]) == 6


# -- live A/B per label ------------------------------------------------------------------------------


@pytest.fixture
def served(fleet: Service) -> dict[str, Counter[str]]:
    """A batch served by prod (version 2) and a canary share (the head): what each served and got right."""
    store = fleet.runtime.store(BOOK)
    store.labels.set("prod", 2, actor="user:test")
    store.labels.set("canary", store.version(), actor="user:test")
    handle = fleet.producer.enqueue_samples(make_tasks(30, seed=7, topics=5), f"{BOOK}@prod", canary=0.4)
    handle.wait(timeout=120)
    counts: dict[str, Counter[str]] = {}
    for result in handle.results():
        assert result.ok and result.output is not None, result.error
        context = result.output
        assert context.agent_output is not None and context.sample is not None
        right = context.agent_output.final_answer == context.sample.ground_truth
        counts.setdefault(context.metadata["served_label"], Counter()).update(
            {"served": 1, "success" if right else "failure": 1}
        )
    return counts


def test_each_label_shows_what_the_fleet_served_and_got_right(
    served: dict[str, Counter[str]], console: RunningConsole
) -> None:
    with console.client() as client:
        rows = {row["label"]: row for row in client.get(f"/api{PAGE}").json()["ab"]["labels"]}
    for label in ("prod", "canary"):
        assert (rows[label]["served"], rows[label]["success"], rows[label]["failure"]) == (
            served[label]["served"],
            served[label]["success"],
            served[label]["failure"],
        ), label


def test_each_label_has_its_success_rate_and_wilson_interval(
    served: dict[str, Counter[str]], fleet: Service, console: RunningConsole
) -> None:
    with console.client() as client:
        rows = {row["label"]: row for row in client.get(f"/api{PAGE}").json()["ab"]["labels"]}
    labels = fleet.runtime.store(BOOK).labels.all()
    for label in ("prod", "canary"):
        success, judged = served[label]["success"], served[label]["served"]
        assert rows[label]["success_rate"] == pytest.approx(success / judged), label
        assert rows[label]["interval_95"] == pytest.approx(list(wilson_interval(success, judged))), label
        assert rows[label]["version"] == labels[label], label


def test_the_ab_plot_draws_a_point_per_judged_label(
    served: dict[str, Counter[str]], console: RunningConsole
) -> None:
    with console.client() as client:
        rows = client.get(f"/api{PAGE}").json()["ab"]["labels"]
        html = client.get(PAGE).text
    judged = [row for row in rows if row["judged"] and row["version"] is not None]
    assert svg_points(html, "ab-chart") == len(judged) >= 2


def test_the_ab_rows_equal_the_recorded_outcomes(
    served: dict[str, Counter[str]], fleet: Service, console: RunningConsole
) -> None:
    store = fleet.runtime.store(BOOK)
    with console.client() as client:
        rows = client.get(f"/api{PAGE}").json()["ab"]["labels"]
    recorded = read_outcomes(fleet.runtime.redis, store.keys)
    assert {row["label"] for row in rows} == set(recorded) | set(store.labels.all())
    assert all(row["served"] == recorded[row["label"]].served for row in rows if row["label"] in recorded)


# -- skills and prompt size over versions ------------------------------------------------------------


def state_at(fleet: Service, version: int) -> dict[str, int]:
    """Active skills and their content's characters at ``version``, read as the skillbook was then."""
    if version == 0:
        return {"version": 0, "active_skills": 0, "content_chars": 0}
    _, view = fleet.runtime.store(BOOK).snapshot_at(version)
    skills = [skill for skill in view.skills() if skill.is_active]
    return {
        "version": version,
        "active_skills": len(skills),
        "content_chars": sum(len(s.content) for s in skills),
    }


def test_the_curves_equal_each_versions_skills_read_as_it_was(
    fleet: Service, console: RunningConsole
) -> None:
    store = fleet.runtime.store(BOOK)
    first, second = (skill.id for skill in store.export().skills()[:2])
    longer = UpdateOperation(type="UPDATE", skill_id=first, content="A much longer rule than it was " * 3)
    store.apply(UpdateBatch(operations=[longer]))  # the same count, more characters
    store.archive([second], actor="user:test")  # one skill fewer
    head = store.version()
    with console.client() as client:
        curves = client.get(f"/api{PAGE}").json()["curves"]
    assert curves["points"] == [state_at(fleet, version) for version in range(head + 1)]
    assert curves["points"][-1]["active_skills"] == curves["points"][-2]["active_skills"] - 1
    assert (curves["from_version"], curves["to_version"], curves["reaches_start"]) == (0, head, True)


def test_the_curves_walk_only_the_last_versions_asked_and_say_so(
    fleet: Service, console: RunningConsole
) -> None:
    head = fleet.runtime.store(BOOK).version()
    with console.client() as client:
        curves = client.get(f"/api{PAGE}", params={"versions": 3}).json()["curves"]
        html = client.get(PAGE, params={"versions": 3}).text
    assert [p["version"] for p in curves["points"]] == [head - 3, head - 2, head - 1, head]
    assert curves["points"][0] == state_at(fleet, head - 3)
    assert curves["reaches_start"] is False
    assert f"Versions {head - 3} to {head}:" in html
    assert "the last 3 versions" in html


def test_the_curve_plots_draw_one_point_per_version(fleet: Service, console: RunningConsole) -> None:
    with console.client() as client:
        points = client.get(f"/api{PAGE}").json()["curves"]["points"]
        html = client.get(PAGE).text
    assert svg_points(html, "skills-chart") == len(points)
    assert svg_points(html, "chars-chart") == len(points)


def test_a_skillbook_never_evaluated_says_there_is_nothing_to_plot(
    fleet: Service, console: RunningConsole
) -> None:
    with console.client() as client:
        html = client.get(PAGE).text
    assert '<p class="empty" id="accuracy-chart">' in html


def test_the_token_cost_per_sample_is_the_batches_pages_for_this_skillbook(
    fleet: Service, console: RunningConsole
) -> None:
    with console.client() as client:
        cost = client.get(f"/api{PAGE}").json()["token_cost"]
        batches = client.get("/api/batches", params={"skillbook": BOOK}).json()
        html = client.get(PAGE).text
    (batch,) = batches["recent"]
    (point,) = cost["cost_points"]
    assert point["batch_id"] == batch["batch_id"]
    assert point["tokens_per_sample"] == batch["usage"]["tokens_per_sample"] > 0
    # total, prompt and completion: one point each for the one batch
    assert svg_points(html, "token-cost-per-sample") == 3


def test_a_bad_grouping_or_range_is_a_400_naming_the_parameter(
    fleet: Service, console: RunningConsole
) -> None:
    with console.client() as client:
        by = client.get(f"/api{PAGE}", params={"by": "colour"})
        versions = client.get(f"/api{PAGE}", params={"versions": "0"})
        missing = client.get("/api/skillbooks/nobook/evaluations")
    assert (by.status_code, versions.status_code, missing.status_code) == (400, 400, 404)
    assert "by='colour'" in by.json()["message"]
    assert "versions=0" in versions.json()["message"]


# -- in a browser --------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.browser
def test_in_chromium_the_evaluations_page_shows_its_plots(
    evaluated: list[EvaluationReport],
    served: dict[str, Counter[str]],
    console: RunningConsole,
    tmp_path: Path,
) -> None:
    with console.client() as client:
        data = client.get(f"/api{PAGE}").json()
        by_label = client.get(f"/api{PAGE}", params={"by": "label"}).json()["accuracy"]
    with headless_chromium(tmp_path / "profile", headers=console.basic_auth_header()) as page:
        page.goto(f"{console.url}{PAGE}")
        accuracy = sum(len(s["points"]) for s in data["accuracy"]["series"])
        assert page.count("svg#accuracy-chart circle.point") == accuracy
        judged = [r for r in data["ab"]["labels"] if r["judged"] and r["version"] is not None]
        assert page.count("svg#ab-chart circle.point") == len(judged)
        assert page.count("svg#skills-chart circle.point") == len(data["curves"]["points"])
        assert page.count("#accuracy tbody tr[data-report]") == len(data["accuracy"]["rows"])
        page.screenshot(SCREENSHOTS / "evaluations.png")
        page.click("#by-label")
        assert page.count("svg#accuracy-chart circle.point") == sum(
            len(s["points"]) for s in by_label["series"]
        )
