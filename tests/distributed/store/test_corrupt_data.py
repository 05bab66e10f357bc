"""Data in Redis the store did not write is a CorruptDataError naming the key and what is wrong."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import redis

from ace_workers.distributed import RedisSkillbookStore
from ace_workers.distributed.store.errors import CorruptDataError
from ace_workers.distributed.store.keys import registry_key
from ace_workers.distributed.store.store import list_skillbooks
from tests.support.operations import add, batch

# The skillbook "book" under the default prefix, as its keys are named in messages.
VERSION = "ace:{sb:book}:version"
SKILLS = "ace:{sb:book}:skills"
CHANGES = "ace:{sb:book}:changes"
STATS = "ace:{sb:book}:stats"


@pytest.fixture
def written(store: RedisSkillbookStore) -> RedisSkillbookStore:
    """The skillbook "book" with one skill, general-00001, at version 1."""
    store.apply(batch(add("general", "Check units.")))
    return store


def corrupt(client: redis.Redis, key: str, kind: str, value: Any) -> None:
    """Replace ``key`` by a ``kind`` ("string", "hash" or "field:<name>") holding ``value``."""
    if kind.startswith("field:"):
        client.hset(key, kind.removeprefix("field:"), value)
        return
    client.delete(key)
    if kind == "string":
        client.set(key, value)
    else:
        client.hset(key, "a", value)


READS: dict[str, Callable[[RedisSkillbookStore], Any]] = {
    "snapshot": lambda store: store.snapshot(),
    "cached_snapshot": lambda store: store.cached_snapshot(),
    "export": lambda store: store.export(),
    "version": lambda store: store.version(),
    "active_skills": lambda store: store.active_skills(),
}

CASES = {
    "a skill that is not JSON": (SKILLS, "field:general-00001", "not json", ["snapshot", "export"]),
    "a skill that is a JSON list": (SKILLS, "field:general-00001", "[1]", ["snapshot", "cached_snapshot"]),
    # active_skills reads the count the meta hash keeps, not the version, unless there is none.
    "a version that is not a number": (VERSION, "string", "abc", ["snapshot", "cached_snapshot", "version"]),
    "a version that is a hash": (VERSION, "hash", "1", list(READS)),
    "skills that are a string": (SKILLS, "string", "x", ["snapshot", "cached_snapshot", "export"]),
}
PROBLEMS = {
    "a skill that is not JSON": "field 'general-00001' holds 'not json', not JSON",
    "a skill that is a JSON list": "field 'general-00001' holds a JSON list, not a skill",
    "a version that is not a number": "holds 'abc', not a whole number",
    "a version that is a hash": "is of the wrong type for this read (WRONGTYPE)",
    "skills that are a string": "is of the wrong type for this read (WRONGTYPE)",
}


@pytest.mark.parametrize(
    ("case", "read"), [(case, read) for case, (*_, reads) in CASES.items() for read in reads]
)
def test_a_corrupt_key_is_named_with_what_is_wrong_by_every_read(
    written: RedisSkillbookStore, redis_client: redis.Redis, case: str, read: str
) -> None:
    key, kind, value, _ = CASES[case]
    corrupt(redis_client, key, kind, value)
    with pytest.raises(CorruptDataError) as raised:
        READS[read](written)
    assert raised.value.key == key
    assert PROBLEMS[case] in str(raised.value)


def test_a_change_log_entry_that_is_not_a_change_is_named_by_its_id(
    written: RedisSkillbookStore, redis_client: redis.Redis
) -> None:
    redis_client.xadd(CHANGES, {"version": "2", "batch": "{bad"}, id="2-0")
    with pytest.raises(CorruptDataError, match=r"key 'ace:\{sb:book\}:changes' entry 2-0 is not a change"):
        written.history()


def test_a_change_log_of_the_wrong_type_is_named(
    written: RedisSkillbookStore, redis_client: redis.Redis
) -> None:
    corrupt(redis_client, CHANGES, "string", "x")
    with pytest.raises(CorruptDataError, match=r"key 'ace:\{sb:book\}:changes' is of the wrong type"):
        written.history()


def test_a_counter_that_is_not_a_number_is_named(
    written: RedisSkillbookStore, redis_client: redis.Redis
) -> None:
    redis_client.hset(STATS, "applies", "many")
    with pytest.raises(
        CorruptDataError, match=r"key 'ace:\{sb:book\}:stats' holds 'many', not a whole number"
    ):
        written.stats()


@pytest.mark.parametrize("name", ["", "a}:b", "\x1b]0;pwned\x07"])
def test_a_registry_listing_a_name_no_skillbook_can_have_is_named(
    written: RedisSkillbookStore, redis_client: redis.Redis, name: str
) -> None:
    redis_client.sadd(registry_key("ace"), name)
    with pytest.raises(
        CorruptDataError, match=r"key 'ace:skillbooks' lists .*, which cannot name a skillbook"
    ):
        list_skillbooks(redis_client)


def test_a_registry_of_the_wrong_type_is_named(redis_client: redis.Redis) -> None:
    redis_client.set(registry_key("ace"), "x")
    with pytest.raises(CorruptDataError, match="key 'ace:skillbooks' is of the wrong type"):
        list_skillbooks(redis_client)


def test_other_error_replies_are_not_called_corrupt_data(
    written: RedisSkillbookStore, redis_client: redis.Redis
) -> None:
    # Out of memory, say, is not the data's fault: it stays the ResponseError it is.
    redis_client.config_set("maxmemory", "1")
    try:
        with pytest.raises(redis.ResponseError) as raised:
            written.apply(batch(add("general", "More.")))
    finally:
        redis_client.config_set("maxmemory", "0")
    assert not isinstance(raised.value, CorruptDataError)
