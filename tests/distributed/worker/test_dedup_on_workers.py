"""Deduplication and the prompt budget as the workers run them: real Redis, real in-process workers.

The embeddings are the packaged all-MiniLM-L6-v2 (offline), the decisions the
simulated SkillManager's.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
import redis

from ace_workers.core import PromptBudget
from ace_workers.dedup import EmbeddingRelevance
from ace_workers.distributed.service import Service, build_service
from ace_workers.distributed.settings import WorkerSettings
from ace_workers.distributed.store.changelog import ChangeKind
from ace_workers.distributed.store.embedding_cache import RedisEmbeddingCache
from ace_workers.sim import failure_traces
from ace_workers.sim.tasks import TOPICS
from ace_workers.steps import AgentStep, DeduplicateStep, UpdateStep
from tests.support.operations import add, batch
from tests.support.workers import running_service

TOPIC_COUNT = 5


def paraphrase(rule: str, topic: str) -> str:
    """The topic's rule said another way (MiniLM similarity 0.90 to 0.93 with the original)."""
    said = rule.replace(f"For {topic} questions, ", f"When a question is about {topic}, always ")
    return said.rstrip(".") + " first."


@pytest.fixture
def dedup_service(redis_client: redis.Redis, redis_url: str) -> Iterator[Service]:
    """Workers whose learning chains end with a DeduplicateStep every 5 samples."""
    with running_service(
        redis_url, learn_threads=2, dedup_provider="sentence_transformers", dedup_interval=5
    ) as built:
        yield built


def test_learning_chains_consolidate_paraphrases_on_the_write_queue(dedup_service: Service) -> None:
    store = dedup_service.runtime.store("support")
    topics = TOPICS[:TOPIC_COUNT]
    # Each rule twice, in other words: as two SkillManager calls on one snapshot may add it.
    twice = [add(text, t.name) for t in topics for text in (t.rule, paraphrase(t.rule, t.name))]
    seeded = store.apply(batch(*twice)).report.added

    handle = dedup_service.producer.enqueue_traces(failure_traces(20, topics=TOPIC_COUNT), "support")
    status = handle.wait(timeout=120)
    assert (status.done, status.failed) == (20, 0)

    # Deduplication, every 5 samples on the write queue, merged each pair: one skill per topic.
    book = store.export()
    active = sorted(skill.section for skill in book.skills())
    assert active == sorted(t.name for t in topics)
    merged_away = [s for s in book.skills(include_invalid=True) if not s.is_active]
    assert len(merged_away) == TOPIC_COUNT
    assert {s.id for s in book.skills(include_invalid=True)} == set(seeded)  # learning tagged, added none

    consolidations = [r for r in store.history(limit=200) if r.kind is ChangeKind.CONSOLIDATE]
    assert consolidations, "no consolidation reached the change log"
    assert all(r.source is not None for r in consolidations)
    assert all(r.source["step"] == "DeduplicateStep" for r in consolidations)
    assert {op["type"] for r in consolidations for op in r.consolidation} == {"MERGE"}

    _, routes = dedup_service.runtime.pipeline("trace_analyser", "support")
    assert [r.queue_role for r in routes if r.name == "DeduplicateStep"] == ["write"]
    # Every skill text met was embedded once and kept in Redis for the next worker or run.
    cache = RedisEmbeddingCache(dedup_service.runtime.redis, store.keys)
    assert len(cache) >= 2 * TOPIC_COUNT


def test_the_prompt_budget_and_embedding_relevance_come_from_the_settings(redis_url: str) -> None:
    settings = WorkerSettings(
        redis_url=redis_url,
        queue_prefix=f"t{uuid.uuid4().hex[:8]}",
        dedup_provider="sentence_transformers",
        prompt_max_skills=7,
        prompt_max_chars=0,
        prune_harmful_margin=2,
        prune_min_tags=4,
    )
    service = build_service(settings, redis_url=redis_url)
    try:
        pipeline, _ = service.runtime.pipeline("ace", "support")
        agent = next(step for step in pipeline.steps if isinstance(step, AgentStep)).agent
        manager = next(step for step in pipeline.steps if isinstance(step, UpdateStep)).skill_manager
        dedup = next(step for step in pipeline.steps if isinstance(step, DeduplicateStep)).manager
        for role in (agent, manager):
            assert role.prompt_budget == PromptBudget(max_skills=7, max_chars=None)
            assert isinstance(role.relevance, EmbeddingRelevance)
        assert dedup.config.prune is not None
        assert (dedup.config.prune.harmful_margin, dedup.config.prune.min_tags) == (2, 4)
    finally:
        service.close()

    unbounded = WorkerSettings(redis_url=redis_url, prompt_max_skills=0, prompt_max_chars=0)
    service = build_service(unbounded, redis_url=redis_url)
    try:
        pipeline, _ = service.runtime.pipeline("ace", "support")
        agent = next(step for step in pipeline.steps if isinstance(step, AgentStep)).agent
        assert agent.prompt_budget is None
        assert agent.relevance is None
    finally:
        service.close()
