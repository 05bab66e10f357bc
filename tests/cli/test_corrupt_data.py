"""Corrupt data in Redis is one line naming the key, never a traceback; Redis text is printed escaped."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
import redis

from ace_workers.core import Skillbook
from ace_workers.distributed.service import build_service, local_workers
from ace_workers.distributed.settings import WorkerSettings
from ace_workers.distributed.store.keys import SkillbookKeys, registry_key
from ace_workers.distributed.store.store import RedisSkillbookStore
from tests.support.cli import Ran, env_with_one_skillbook, run_console_script, write_traces
from tests.support.operations import add, batch

PREFIX = "clicorrupt"
KEYS = SkillbookKeys("book", PREFIX)
ESCAPE = "\x1b]0;pwned\x07"  # sets a terminal's window title


@pytest.fixture
def env(clean_env: pytest.MonkeyPatch, redis_url: str, redis_client: redis.Redis) -> pytest.MonkeyPatch:
    return env_with_one_skillbook(clean_env, redis_url, redis_client, PREFIX)


Ace = Callable[..., Ran]


@pytest.fixture
def ace(env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Ace:
    """Run ``ace-workers ...`` as its console script does."""
    return lambda *args: run_console_script(env, capsys, *args)


def one_line_error(ran: Ran) -> str:
    """The one error line a failed command printed; fails if it printed more, or ended well."""
    assert ran.code == 1, ran
    assert ran.err.count("\n") == 1, ran.err
    return ran.err


NOT_JSON = f"key '{KEYS.skills}' field 'general-00001' holds 'not json', not JSON"
NOT_A_NUMBER = f"key '{KEYS.version}' holds 'abc', not a whole number"
WRONG_TYPE = f"key '{KEYS.skills}' is of the wrong type for this read (WRONGTYPE)"
EMPTY_NAME = f"key '{registry_key(PREFIX)}' lists '', which cannot name a skillbook"


def test_show_of_a_skill_that_is_not_json_is_one_line_naming_the_key(
    ace: Ace, redis_client: redis.Redis
) -> None:
    redis_client.hset(KEYS.skills, "general-00001", "not json")
    assert NOT_JSON in one_line_error(ace("skillbook", "show", "book"))


def test_show_of_a_version_that_is_not_a_number_is_one_line_naming_the_key(
    ace: Ace, redis_client: redis.Redis
) -> None:
    redis_client.set(KEYS.version, "abc")
    assert NOT_A_NUMBER in one_line_error(ace("skillbook", "show", "book"))


def test_show_of_a_key_of_the_wrong_type_is_one_line_naming_the_key(
    ace: Ace, redis_client: redis.Redis
) -> None:
    redis_client.delete(KEYS.skills)
    redis_client.set(KEYS.skills, "a string where a hash is")
    assert WRONG_TYPE in one_line_error(ace("skillbook", "show", "book"))


def test_history_of_a_change_that_is_not_json_is_one_line_naming_the_entry(
    ace: Ace, redis_client: redis.Redis
) -> None:
    redis_client.xadd(KEYS.changes, {"version": "2", "batch": "{bad", "after": "x"}, id="2-0")
    assert f"key '{KEYS.changes}' entry 2-0 is not a change record" in one_line_error(
        ace("skillbook", "history", "book")
    )


def test_list_json_of_a_version_that_is_not_a_number_is_one_line_naming_the_key(
    ace: Ace, redis_client: redis.Redis
) -> None:
    redis_client.set(KEYS.version, "abc")
    assert NOT_A_NUMBER in one_line_error(ace("skillbook", "list", "--json"))


@pytest.mark.parametrize("args", [["skillbook", "list"], ["skillbook", "list", "--json"]])
def test_list_of_a_registry_with_an_empty_name_is_one_line_naming_the_key(
    ace: Ace, redis_client: redis.Redis, args: list[str]
) -> None:
    redis_client.sadd(registry_key(PREFIX), "")
    assert EMPTY_NAME in one_line_error(ace(*args))


def test_list_never_prints_a_terminal_escape_read_from_the_registry(
    ace: Ace, redis_client: redis.Redis
) -> None:
    redis_client.sadd(registry_key(PREFIX), ESCAPE)
    ran = ace("skillbook", "list")
    assert "\x1b" not in ran.out + ran.err
    assert "lists '\\x1b]0;pwned\\x07', which cannot name a skillbook" in one_line_error(ran)


def test_show_prints_a_terminal_escape_in_a_skill_escaped(ace: Ace, redis_client: redis.Redis) -> None:
    book = Skillbook()
    book.add_skill("general", f"Check units.{ESCAPE}")
    RedisSkillbookStore(redis_client, "book", prefix=PREFIX).import_skillbook(book, replace=True)
    ran = ace("skillbook", "show", "book")
    assert ran.code == 0, ran
    assert "\x1b" not in ran.out
    assert "Check units.\\x1b]0;pwned\\x07" in ran.out


def test_history_prints_a_terminal_escape_in_a_section_escaped(ace: Ace, redis_client: redis.Redis) -> None:
    store = RedisSkillbookStore(redis_client, "book", prefix=PREFIX)
    store.apply(batch(add("Estimate first.", section=f"evil{ESCAPE}")))
    ran = ace("skillbook", "history", "book")
    assert ran.code == 0, ran
    assert "\x1b" not in ran.out


def test_enqueue_onto_a_corrupt_skillbook_is_one_line_naming_the_key_and_sends_nothing(
    ace: Ace, redis_client: redis.Redis, redis_url: str, tmp_path: Path
) -> None:
    redis_client.hset(KEYS.skills, "general-00001", "not json")
    traces = write_traces(tmp_path / "traces.jsonl", 2)
    service = build_service(WorkerSettings.from_env(), redis_url=redis_url)
    try:
        with local_workers(service, learn_threads=1):
            ran = ace("enqueue", str(traces), "--skillbook", "book")
    finally:
        service.close()
    assert NOT_JSON in one_line_error(ran)
    assert list(redis_client.scan_iter(match=f"{PREFIX}:{{batch:*")) == []


def test_list_names_a_bad_registry_member_in_one_line_and_still_lists_the_others(
    ace: Ace, redis_client: redis.Redis
) -> None:
    redis_client.sadd(registry_key(PREFIX), "no/slash")
    for ran in (ace("skillbook", "list"), ace("skillbook", "list", "--json")):
        bad = (
            f"unreadable: corrupt data in Redis: key '{registry_key(PREFIX)}' lists 'no/slash', which cannot"
        )
        assert bad in one_line_error(ran)
        assert "book" in ran.out


def test_list_names_a_corrupt_skillbook_in_one_line_and_still_lists_the_others(
    ace: Ace, redis_client: redis.Redis
) -> None:
    RedisSkillbookStore(redis_client, "other", prefix=PREFIX).import_skillbook(Skillbook())
    redis_client.set(KEYS.version, "abc")
    ran = ace("skillbook", "list", "--json")
    assert f"unreadable: skillbook 'book': corrupt data in Redis: {NOT_A_NUMBER}" in one_line_error(ran)
    assert [summary["name"] for summary in json.loads(ran.out)] == ["other"]
