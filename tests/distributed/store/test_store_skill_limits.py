"""Skill limits against a real Redis: an over-long ADD from an LLM costs that operation, not the batch."""

from __future__ import annotations

import logging

import pytest
import redis

from ace_workers.core import Skillbook
from ace_workers.core.skill_limits import MAX_CONTENT_CHARS
from ace_workers.distributed import RedisSkillbookStore
from ace_workers.errors import SkillbookFormatError
from tests.support.operations import add, batch, tag

LONG = "x" * 200_000


def test_an_over_long_add_is_left_out_and_the_rest_of_the_batch_applies(
    redis_client: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    store = RedisSkillbookStore(redis_client, "book")
    (first,) = store.apply(batch(add("Check units."))).report.added
    with caplog.at_level(logging.WARNING, logger="ace_workers.distributed.store.planning"):
        result = store.apply(batch(add(LONG), tag(first, helpful=1), add("Cite sources.")))

    assert [(index, kind) for index, kind, _ in result.report.too_long] == [(0, "ADD")]
    assert len(result.report.added) == 1
    assert result.report.tagged == [first]
    contents = sorted(skill.content for skill in store.snapshot()[1].skills())
    assert contents == ["Check units.", "Cite sources."]
    assert store.stats()["skipped_ops"] == 1
    assert any(
        f"skipped ADD operation #0: its content has 200000 characters, over the {MAX_CONTENT_CHARS}"
        in record.getMessage()
        for record in caplog.records
    )


def test_an_import_holding_an_over_long_skill_writes_nothing(redis_client: redis.Redis) -> None:
    store = RedisSkillbookStore(redis_client, "book")
    # from_dict is the reader of stored skills and checks no limit: a skillbook built in code.
    book = Skillbook.from_dict({"skills": {"general-00001": {"section": "general", "content": LONG}}})
    with pytest.raises(SkillbookFormatError, match="skill 'general-00001': its content has 200000"):
        store.import_skillbook(book)
    assert store.version() == 0
