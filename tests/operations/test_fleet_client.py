"""The fleet client on a real Redis: the schema checked when it opens, stores by name."""

from __future__ import annotations

import pytest
import redis

from ace_workers.core import Skillbook
from ace_workers.distributed.settings import WorkerSettings
from ace_workers.distributed.store.errors import NewerSchemaError, UnknownSkillbookError
from ace_workers.distributed.store.keys import schema_key
from ace_workers.operations import open_fleet


def _settings(prefix: str = "ops") -> WorkerSettings:
    return WorkerSettings(queue_prefix=prefix)


def test_a_store_written_through_the_client_is_found_by_name(
    redis_url: str, redis_client: redis.Redis
) -> None:
    book = Skillbook()
    book.add_skill("general", "Check units before answering.")
    with open_fleet(_settings(), redis_url) as fleet:
        fleet.store("book").import_skillbook(book)
        assert fleet.skillbook_names() == ["book"]
        assert fleet.existing_store("book").exists()


def test_an_unknown_skillbook_names_those_there_are(redis_url: str, redis_client: redis.Redis) -> None:
    with open_fleet(_settings(), redis_url) as fleet:
        fleet.store("known").import_skillbook(Skillbook())
        known = r"no skillbook named 'nope' in Redis \(known: known\)"
        with pytest.raises(UnknownSkillbookError, match=known):
            fleet.existing_store("nope")


def test_data_of_a_newer_schema_is_refused_when_the_client_opens(
    redis_url: str, redis_client: redis.Redis
) -> None:
    redis_client.hset(schema_key("ops"), mapping={"version": "99", "written_by": "9.9.9"})
    with pytest.raises(NewerSchemaError, match="schema 99"), open_fleet(_settings(), redis_url):
        pass
