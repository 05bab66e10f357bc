"""Labelled versions: labels point at versions, move by compare-and-set, are logged; readers of a
label serve that version while the head moves on."""

from __future__ import annotations

import threading

import pytest
import redis

from ace_workers.distributed.store import RedisSkillbookStore
from ace_workers.distributed.store.errors import (
    ChangelogTrimmedError,
    InvalidLabelError,
    InvalidSkillbookNameError,
    LabelMovedError,
    UnknownLabelError,
    VersionRangeError,
)
from ace_workers.distributed.store.labels import SkillbookRef, parse_skillbook_ref
from tests.support.operations import add, batch, remove, update


def _three_versions(store: RedisSkillbookStore) -> None:
    store.apply(batch(add("Check units.", "math")))  # v1: math-00001
    store.apply(batch(add("Estimate first.", "math")))  # v2: math-00002
    store.apply(
        batch(
            update("math-00001", "Check the units twice."),
            remove("math-00002"),
            add("Read twice.", "reading"),
        )
    )  # v3


def test_a_reference_names_the_skillbook_and_maybe_a_label() -> None:
    assert parse_skillbook_ref("support") == SkillbookRef("support")
    assert parse_skillbook_ref("support@prod") == SkillbookRef("support", "prod")
    assert parse_skillbook_ref("support@head") == SkillbookRef("support")
    assert str(parse_skillbook_ref("support@canary")) == "support@canary"
    with pytest.raises(InvalidLabelError, match="'pr od'"):
        parse_skillbook_ref("support@pr od")
    with pytest.raises(InvalidSkillbookNameError):
        parse_skillbook_ref("@prod")


def test_a_label_points_at_a_version_and_every_move_is_logged(store: RedisSkillbookStore) -> None:
    _three_versions(store)
    first = store.labels.set("prod", 1, actor="user:ann", note="first good one")
    assert (first.from_version, first.to_version) == (None, 1)
    store.labels.set("prod", 3, actor="user:bob", evaluation={"accuracy": 0.9})
    store.labels.set("canary", 2, actor="user:bob")
    assert store.labels.all() == {"canary": 2, "prod": 3}
    moves = store.labels.history("prod")
    assert [(m.from_version, m.to_version, m.actor) for m in moves] == [
        (1, 3, "user:bob"),
        (None, 1, "user:ann"),
    ]
    assert moves[0].evaluation == {"accuracy": 0.9}
    assert moves[1].note == "first good one"
    assert len(store.labels.history()) == 3


def test_a_label_cannot_point_beyond_the_head_or_be_called_head(store: RedisSkillbookStore) -> None:
    _three_versions(store)
    with pytest.raises(VersionRangeError, match="current version is 3"):
        store.labels.set("prod", 4, actor="user:ann")
    with pytest.raises(InvalidLabelError, match="current version itself"):
        store.labels.set("head", 1, actor="user:ann")
    with pytest.raises(UnknownLabelError, match="no label 'prod'"):
        store.labels.require("prod")
    assert store.labels.all() == {}


def test_a_conditional_move_refuses_when_the_label_moved_meanwhile(store: RedisSkillbookStore) -> None:
    _three_versions(store)
    store.labels.set("prod", 1, actor="user:ann")
    store.labels.set("prod", 2, actor="user:bob", expect=1)
    with pytest.raises(LabelMovedError, match="expected at version 1 but is at 2"):
        store.labels.set("prod", 3, actor="user:ann", expect=1)
    assert store.labels.get("prod") == 2


def test_a_conditional_delete_refuses_when_the_label_moved_meanwhile(store: RedisSkillbookStore) -> None:
    _three_versions(store)
    store.labels.set("prod", 2, actor="user:ann")
    with pytest.raises(LabelMovedError, match="expected at version 1 but is at 2"):
        store.labels.delete("prod", actor="user:bob", expect=1)
    assert store.labels.get("prod") == 2
    assert store.labels.delete("prod", actor="user:bob", expect=2).to_version is None
    assert store.labels.get("prod") is None


def test_of_concurrent_conditional_moves_exactly_one_wins(store: RedisSkillbookStore) -> None:
    _three_versions(store)
    store.labels.set("prod", 1, actor="user:ann")
    barrier = threading.Barrier(6)
    outcomes: list[str] = []

    def promote(version: int) -> None:
        barrier.wait()
        try:
            store.labels.set("prod", version, actor=f"user:p{version}", expect=1)
            outcomes.append("moved")
        except LabelMovedError:
            outcomes.append("refused")

    threads = [threading.Thread(target=promote, args=(2 + i % 2,)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["moved"] + ["refused"] * 5
    assert len(store.labels.history("prod")) == 2


def test_a_labelled_snapshot_is_the_skillbook_as_it_was(store: RedisSkillbookStore) -> None:
    _three_versions(store)
    states = {}
    for version in (1, 2, 3):
        states[version] = {s.id: s.content for s in store.snapshot_at(version)[1].skills()}
    assert states[1] == {"math-00001": "Check units."}
    assert states[2] == {"math-00001": "Check units.", "math-00002": "Estimate first."}
    assert states[3] == {"math-00001": "Check the units twice.", "reading-00003": "Read twice."}
    with pytest.raises(VersionRangeError, match="versions 1 to 3"):
        store.snapshot_at(4)


def test_a_reader_of_a_label_keeps_serving_it_while_the_head_moves(store: RedisSkillbookStore) -> None:
    _three_versions(store)
    store.labels.set("prod", 2, actor="user:ann")
    store.apply(batch(add("Round at the end.", "math")))
    store.apply(batch(remove("math-00001")))
    version, served = store.snapshot_of("prod")
    assert version == 2
    assert {s.id for s in served.skills()} == {"math-00001", "math-00002"}
    assert "Estimate first." in served.as_prompt()
    head_version, head = store.snapshot_of(None)
    assert head_version == 5
    assert {s.id for s in head.skills()} == {"reading-00003", "math-00004"}


def test_a_label_beyond_the_trimmed_change_log_fails_naming_it(redis_client: redis.Redis) -> None:
    store = RedisSkillbookStore(redis_client, "trimmed", changelog_maxlen=1)
    for number in range(120):  # MAXLEN ~ trims whole nodes: write enough for one to go
        store.apply(batch(add(f"Skill number {number}.")))
    store.labels.set("prod", 1, actor="user:ann")
    with pytest.raises(ChangelogTrimmedError, match="no longer reaches back to version 2"):
        store.snapshot_of("prod")


def test_deleting_the_skillbook_deletes_its_labels(store: RedisSkillbookStore) -> None:
    _three_versions(store)
    store.labels.set("prod", 2, actor="user:ann")
    store.delete()
    assert store.labels.all() == {}
    assert store.labels.history() == []
