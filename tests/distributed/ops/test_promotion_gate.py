"""Promotion gated by evaluation, on real Redis and real workers with the simulated LLM.

The harmful-rule test: the fleet learns the good rules (prod), then learns a wrong rule
from misleading feedback (canary = head); the evaluation catches it, the promotion is
refused, and prod keeps serving the good version.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from ace_workers.core import SimpleEnvironment, SkillbookView
from ace_workers.distributed.ops.evaluation import (
    TaskSet,
    evaluate_versions,
    fleet_agent,
    fleet_redactor,
    read_task_file,
    resolve_targets,
)
from ace_workers.distributed.ops.promotion import PromotionDecision, promote_label
from ace_workers.distributed.service import Service
from ace_workers.distributed.store.store import RedisSkillbookStore
from ace_workers.sim import TOPICS, failure_traces, make_tasks, misleading_traces
from tests.support.workers import running_service

ZORB, FLUX = TOPICS[0], TOPICS[1]
ACTOR = "user:tester"


@pytest.fixture
def service(redis_client: redis.Redis, redis_url: str) -> Iterator[Service]:
    """In-process workers for all three queues on the test Redis (flushed around the test)."""
    with running_service(redis_url) as built:
        yield built


def learn(service: Service, traces: list[dict[str, Any]], skillbook: str = "support") -> int:
    """Learn ``traces`` on the fleet; the skillbook's version after."""
    status = service.producer.enqueue_traces(traces, skillbook).wait(timeout=60)
    assert (status.done, status.failed) == (len(traces), 0)
    return service.runtime.store(skillbook).version()


def task_file(tmp_path: Path, n: int = 20) -> TaskSet:
    """``n`` zorb and flux tasks (half each) as a task file, read back."""
    path = tmp_path / "tasks.jsonl"
    lines = [
        json.dumps({"question": t.question, "context": t.context, "ground_truth": t.ground_truth})
        for t in make_tasks(n, seed=3, topics=[ZORB, FLUX])
    ]
    path.write_text("\n".join(lines) + "\n")
    return read_task_file(path)


def right_answers(service: Service, book: SkillbookView, tasks: TaskSet) -> int:
    """How many of ``tasks`` the fleet's agent answers right reading ``book``."""
    agent, judge = fleet_agent(service.runtime, "support"), SimpleEnvironment()
    return sum(
        judge.evaluate(t, agent.generate(t.question, t.context, book)).metrics["accuracy"] == 1.0
        for t in tasks.samples
    )


def test_a_harmful_rule_is_caught_by_the_evaluation_and_prod_keeps_the_good_version(
    service: Service, tmp_path: Path
) -> None:
    store: RedisSkillbookStore = service.runtime.store("support")
    tasks = task_file(tmp_path)
    good = learn(service, failure_traces(8, topics=[ZORB, FLUX]))
    store.labels.set("prod", good, actor=ACTOR, note="learned the rules")

    # One at a time: each misleading lesson is a vote against the good rule until it has harmed
    # more than helped (it helped at most 3 times); the next one replaces it with the wrong rule.
    for trace in misleading_traces(8, topics=[ZORB]):
        head = learn(service, [trace])
    _, book = store.snapshot()
    assert [s.content for s in book.skills() if s.section == "zorb"] == [ZORB.wrong_rule]
    store.labels.set("canary", head, actor=ACTOR)

    agent = fleet_agent(service.runtime, "support")
    redactor = fleet_redactor(service.runtime, "support")
    report = evaluate_versions(
        store, resolve_targets(store, labels=["prod", "canary"]), tasks, agent, actor=ACTOR, redactor=redactor
    )
    assert report.score_of("prod").accuracy == 1.0
    assert report.score_of("canary").accuracy == 0.5  # every zorb task answered wrong

    result = promote_label(
        store, "canary", "prod", actor=ACTOR, if_better=True, tasks=tasks, agent=agent, redactor=redactor
    )
    assert result.decision is PromotionDecision.REFUSED
    assert "not better by more than the margin 0" in result.reason
    assert store.labels.get("prod") == good
    assert [m.to_version for m in store.labels.history("prod")] == [good]  # never moved
    recorded = store.evaluations.recent()
    assert [r["promotion"] and r["promotion"]["decision"] for r in recorded] == ["refused", None]
    assert recorded[0]["results"][0]["accuracy"] == 0.5

    # A reader of prod still serves the good version, and answers every task right.
    version, prod_book = store.snapshot_of("prod")
    assert version == good
    assert [s.content for s in prod_book.skills() if s.section == "zorb"] == [ZORB.rule]
    assert right_answers(service, prod_book, tasks) == 20


def test_a_better_candidate_is_promoted_with_its_evaluation_in_the_label_log(
    service: Service, tmp_path: Path
) -> None:
    store = service.runtime.store("support")
    tasks = task_file(tmp_path)
    half = learn(service, failure_traces(3, topics=[FLUX]))
    store.labels.set("prod", half, actor=ACTOR)
    whole = learn(service, failure_traces(3, topics=[ZORB]))
    store.labels.set("canary", whole, actor=ACTOR)

    agent = fleet_agent(service.runtime, "support")
    result = promote_label(
        store,
        "canary",
        "prod",
        actor=ACTOR,
        note="zorb learned",
        if_better=True,
        tasks=tasks,
        agent=agent,
        redactor=fleet_redactor(service.runtime, "support"),
    )
    assert result.decision is PromotionDecision.PROMOTED
    assert (result.candidate_version, result.target_version) == (whole, half)
    assert store.labels.get("prod") == whole
    move = store.labels.history("prod")[0]
    assert (move.from_version, move.to_version, move.actor, move.note) == (half, whole, ACTOR, "zorb learned")
    assert move.evaluation is not None
    assert move.evaluation["promotion"]["decision"] == "promoted"
    assert {r["name"]: r["accuracy"] for r in move.evaluation["results"]} == {"canary": 1.0, "prod": 0.5}
    assert store.evaluations.recent(1)[0]["id"] == move.evaluation["id"]


def test_a_gain_of_exactly_the_margin_is_refused(service: Service, tmp_path: Path) -> None:
    store = service.runtime.store("support")
    tasks = task_file(tmp_path)  # 10 zorb, 10 flux: flux alone scores 0.5, both 1.0
    store.labels.set("prod", learn(service, failure_traces(3, topics=[FLUX])), actor=ACTOR)
    store.labels.set("canary", learn(service, failure_traces(3, topics=[ZORB])), actor=ACTOR)
    gate = functools.partial(
        promote_label,
        store,
        "canary",
        "prod",
        actor=ACTOR,
        if_better=True,
        tasks=tasks,
        agent=fleet_agent(service.runtime, "support"),
        redactor=fleet_redactor(service.runtime, "support"),
    )
    kept = gate(margin=0.5)
    assert kept.decision is PromotionDecision.REFUSED
    moved = gate(margin=0.45)
    assert moved.decision is PromotionDecision.PROMOTED


def test_a_target_label_not_set_yet_takes_the_candidate(service: Service, tmp_path: Path) -> None:
    store = service.runtime.store("support")
    store.labels.set("canary", learn(service, failure_traces(3, topics=[ZORB])), actor=ACTOR)
    result = promote_label(
        store,
        "canary",
        "prod",
        actor=ACTOR,
        if_better=True,
        tasks=task_file(tmp_path),
        agent=fleet_agent(service.runtime, "support"),
        redactor=fleet_redactor(service.runtime, "support"),
    )
    assert result.decision is PromotionDecision.PROMOTED
    assert "was not set" in result.reason
    assert store.labels.get("prod") == store.labels.get("canary")
    assert store.labels.history("prod")[0].from_version is None
