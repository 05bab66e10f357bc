"""``skillbook label set|show|list|delete|history``: text and --json, and clear errors."""

from __future__ import annotations

import json

import pytest
import redis
from typer.testing import CliRunner

from ace_workers.cli import app
from ace_workers.distributed.store import RedisSkillbookStore
from tests.support.cli import said
from tests.support.operations import add, batch
from tests.support.schema0 import stamp_current_schema

PREFIX = "clilabels"


@pytest.fixture
def book(clean_env: pytest.MonkeyPatch, redis_client: redis.Redis, redis_url: str) -> RedisSkillbookStore:
    """Skillbook "book" at version 3, the CLI pointed at it."""
    clean_env.setenv("ACE_REDIS_URL", redis_url)
    clean_env.setenv("ACE_QUEUE_PREFIX", PREFIX)
    stamp_current_schema(redis_client, PREFIX)  # as this version's first process did
    store = RedisSkillbookStore(redis_client, "book", prefix=PREFIX)
    for content in ("Check units.", "Estimate first.", "Read twice."):
        store.apply(batch(add(content, "math")))
    return store


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["skillbook", "label", *args])
    return result.exit_code, result.output


def test_set_moves_and_logs_a_label_with_its_actor_and_note(book: RedisSkillbookStore) -> None:
    code, out = invoke("set", "book", "prod", "1", "--actor", "ann", "--note", "first good one")
    assert code == 0, out
    assert "label 'prod' set to version 1" in out
    code, out = invoke("set", "book", "prod", "3", "--json")
    assert code == 0, out
    moved = json.loads(out)
    assert (moved["from_version"], moved["to_version"], moved["label"]) == (1, 3, "prod")
    assert book.labels.get("prod") == 3
    assert book.labels.history("prod")[1].actor == "user:ann"
    assert book.labels.history("prod")[1].note == "first good one"


def test_show_gives_the_version_and_the_moves(book: RedisSkillbookStore) -> None:
    book.labels.set("prod", 1, actor="user:ann", note="first")
    book.labels.set("prod", 2, actor="user:bob", note="second")
    code, out = invoke("show", "book", "prod")
    assert code == 0, out
    assert "label 'prod' is at version 2, 1 behind the head (3)" in said(out)
    assert "user:bob" in out
    assert "first" in out
    code, out = invoke("show", "book", "prod", "--json")
    shown = json.loads(out)
    assert (shown["version"], shown["head"]) == (2, 3)
    assert [move["to_version"] for move in shown["moves"]] == [2, 1]


def test_list_gives_every_label_and_the_head(book: RedisSkillbookStore) -> None:
    book.labels.set("prod", 1, actor="user:ann")
    book.labels.set("canary", 3, actor="user:ann")
    code, out = invoke("list", "book")
    assert code == 0, out
    assert "head at version 3" in out
    assert "canary 3 at the head" in said(out)
    assert "prod 1 2" in said(out)
    code, out = invoke("list", "book", "--json")
    assert json.loads(out) == {"name": "book", "head": 3, "labels": {"canary": 3, "prod": 1}}


def test_delete_removes_a_label_and_the_log_keeps_the_move(book: RedisSkillbookStore) -> None:
    book.labels.set("canary", 2, actor="user:ann")
    code, out = invoke("delete", "book", "canary", "--note", "done")
    assert code == 0, out
    assert "label 'canary' deleted (it was at version 2)" in out
    assert book.labels.all() == {}
    code, out = invoke("history", "book", "canary", "--json")
    moves = json.loads(out)
    assert [(m["from_version"], m["to_version"]) for m in moves] == [(2, None), (None, 2)]
    assert moves[0]["note"] == "done"


def test_history_lists_every_label_move_newest_first(book: RedisSkillbookStore) -> None:
    book.labels.set("prod", 1, actor="user:ann")
    book.labels.set("canary", 2, actor="user:bob")
    code, out = invoke("history", "book", "--json")
    assert code == 0, out
    assert [m["label"] for m in json.loads(out)] == ["canary", "prod"]
    code, out = invoke("history", "book")
    assert "canary" in out
    assert "user:bob" in out


def test_an_unknown_label_names_the_labels_there_are(book: RedisSkillbookStore) -> None:
    book.labels.set("prod", 1, actor="user:ann")
    code, out = invoke("show", "book", "canary")
    assert code == 2
    assert "skillbook 'book' has no label 'canary' (its labels: prod)" in said(out)
    code, out = invoke("delete", "book", "canary")
    assert code == 2
    assert "has no label 'canary'" in said(out)


def test_a_version_out_of_range_is_refused_naming_the_head(book: RedisSkillbookStore) -> None:
    code, out = invoke("set", "book", "prod", "9")
    assert code == 2
    assert "cannot point label 'prod' at version 9, the current version is 3" in said(out)
    code, out = invoke("set", "book", "prod", "0")
    assert code == 2
    assert "a label points at a version >= 1" in said(out)
    assert book.labels.all() == {}


def test_a_bad_label_name_is_refused_before_connecting(book: RedisSkillbookStore) -> None:
    code, out = invoke("set", "book", "head", "1")
    assert code == 2
    assert "'head' is the current version itself" in said(out)
    code, out = invoke("set", "book", "pr od", "1")
    assert code == 2
    assert "invalid label 'pr od'" in said(out)


def test_an_unknown_skillbook_is_named(book: RedisSkillbookStore) -> None:
    code, out = invoke("list", "other")
    assert code == 2
    assert "no skillbook named 'other'" in said(out)


def test_set_takes_head_for_the_current_version_and_the_actor_from_ace_actor(
    book: RedisSkillbookStore, clean_env: pytest.MonkeyPatch
) -> None:
    clean_env.setenv("ACE_ACTOR", "carol")
    code, out = invoke("set", "book", "prod", "head")
    assert code == 0, out
    assert "label 'prod' set to version 3" in out
    assert book.labels.get("prod") == 3
    assert book.labels.history("prod")[0].actor == "user:carol"


def test_set_refuses_a_version_that_is_no_number_naming_it(book: RedisSkillbookStore) -> None:
    code, out = invoke("set", "book", "prod", "latest")
    assert code == 2
    assert "'latest' is neither a version number nor 'head'" in said(out)
    assert book.labels.all() == {}
