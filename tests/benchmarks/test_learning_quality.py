"""benchmarks/learning_quality.py's small setting, on the test Redis and in-process workers: its figures
are read from what the fleet learned, not assumed."""

from __future__ import annotations

from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest

from ace_workers.core import Skillbook, SkillbookView
from ace_workers.distributed.ops.evaluation import fleet_agent
from ace_workers.distributed.service import build_service
from tests.support.benchmarks import import_benchmark
from tests.support.fixtures import connect_test_redis

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def quality() -> ModuleType:
    """The benchmark's module."""
    return import_benchmark("learning_quality")


@pytest.fixture(scope="module")
def measured(quality: ModuleType, redis_server_url: str) -> Iterator[dict[str, Any]]:
    """The small setting run once for the module on the test Redis (flushed before and after): its rows,
    and a service to read what it left."""
    redis_url = redis_server_url
    client = connect_test_redis(redis_url)
    client.flushdb()
    tasks = import_benchmark("quality_tasks")
    args = quality.parse_args(["--small", "--latency", "0.01"])
    scale = quality.scale_of(args)
    family = tasks.load_family("sim", train=scale.train, held_out=scale.held_out, topics=scale.topics, seed=7)
    settings = quality.build_settings(quality.worker_environment(args, redis_url, scale))
    rows = quality.measure_all(settings, redis_url, family, scale, log=lambda _: None)
    service = build_service(settings, redis_url=redis_url)
    try:
        yield {"rows": {row.setting.name: row for row in rows}, "service": service, "family": family}
    finally:
        service.close()
        client.flushdb()
        client.close()


def skillbook_of(measured: dict[str, Any], setting: str) -> str:
    """The skillbook a setting learned into (settings are numbered in order)."""
    return f"quality-{list(measured['rows']).index(setting)}"


def test_the_small_setting_measures_every_figure_from_what_was_learned(
    quality: ModuleType, measured: dict[str, Any]
) -> None:
    rows, service, family = measured["rows"], measured["service"], measured["family"]
    measures = import_benchmark("quality_measures")
    one_slot = rows["1 learn slot"]
    # Learning shows on held-out tasks: nothing is trusted after one epoch, the rules are by the last.
    assert one_slot.accuracy[0] == 0.0
    assert one_slot.accuracy[-1] > one_slot.accuracy[0]

    # Duplication counts what the skillbook holds: its skills in the topics' sections, per topic learned.
    store = service.runtime.store(skillbook_of(measured, "1 learn slot"))
    _, head = store.snapshot()
    names = {topic.name for topic in family.topics}
    in_topic_sections = [s for s in head.skills() if s.section in names]
    assert one_slot.rule_skills == (len(in_topic_sections), len({s.section for s in in_topic_sections}))

    # Recall: every learned rule shown, and none once the learned skills are kept out of the prompt.
    distractors = service.runtime.store(skillbook_of(measured, "1,000 distractors"))
    _, view = distractors.snapshot_of(None)
    shown, needed = rows["1,000 distractors"].recall
    assert needed > 0 and shown == needed
    skills = measures.active_skills(view)
    without = Skillbook()
    for skill in skills:
        if measures.rule_of(skill.content, family.topics) is None:
            without.add_skill(skill.section, skill.content)
    agent = fleet_agent(service.runtime, distractors.name)
    cut = measures.rule_recall(
        skills,
        family.held_out,
        family.topic_of,
        lambda sample: agent.build_prompt(sample.question, sample.context, SkillbookView(without)),
    )
    assert cut == (0, needed)


def test_review_mode_counts_the_pending_proposals_and_the_ideas_they_state(measured: dict[str, Any]) -> None:
    rows, service, family = measured["rows"], measured["service"], measured["family"]
    store = service.runtime.store(skillbook_of(measured, "review mode"))
    pending, ideas = rows["review mode"].proposals
    assert pending == store.review.pending_count() > 0
    sections = {
        op["section"]
        for p in store.review.proposals(limit=1000)
        for op in p.operations
        if op["type"] == "ADD"
    }
    assert ideas == len(sections & {topic.name for topic in family.topics})
    assert rows["review mode"].accuracy == [0.0] * len(rows["review mode"].accuracy)  # nothing was approved


def test_misleading_feedback_is_measured_in_the_served_version(measured: dict[str, Any]) -> None:
    rows, service, family = measured["rows"], measured["service"], measured["family"]
    for setting in ("30% misleading, promote", "30% misleading, gated"):
        store = service.runtime.store(skillbook_of(measured, setting))
        _, served = store.snapshot_of("prod")
        wrong = {
            s.section
            for s in served.skills()
            if any(t.is_wrongly_stated_by(s.content) for t in family.topics)
        }
        harmed, misled = rows[setting].harm
        assert misled > 0
        assert harmed == len(wrong)
