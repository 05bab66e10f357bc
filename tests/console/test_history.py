"""The history area over HTTP: the change log, diffs, rollback and labels, against real Redis.

The learned fleet's skillbook shows the timeline as workers wrote it; a skillbook
written here version by version pins down pagination, diffs, rollback and labels.
Read-only mode and CSRF for every POST are covered by test_gate.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from ace_workers.console.audit import read_audit
from ace_workers.distributed.service import Service
from ace_workers.distributed.store.change_summary import skill_changes
from ace_workers.distributed.store.store import RedisSkillbookStore
from tests.support.console import RunningConsole, api_post, post_form, running_console
from tests.support.operations import add, batch, remove, tag, update


@pytest.fixture
def crafted(idle_service: Service) -> Iterator[tuple[RunningConsole, RedisSkillbookStore]]:
    """Skillbook ``support`` at version 5, written here, and the console of its (worker-less) fleet."""
    store = idle_service.runtime.store("support")
    store.apply(batch(add("Check units.", "math"), add("Estimate first.", "math")))  # v1: 00001, 00002
    store.apply(batch(tag("math-00001", helpful=2)))  # v2
    store.apply(batch(add("Read twice.", "reading"), update("math-00002", "Estimate, then compute.")))  # v3
    store.apply(batch(remove("math-00001")))  # v4
    store.apply(batch(tag("reading-00003", harmful=1)))  # v5
    with running_console(idle_service) as running:
        yield running, store


# -- the timeline ------------------------------------------------------------------------------


def test_the_timeline_of_the_learned_skillbook_is_its_change_log(
    console: RunningConsole, fleet: Service
) -> None:
    store = fleet.runtime.store("support")
    with console.client() as client:
        data = client.get("/api/skillbooks/support/history").json()
    expected = store.history(50)
    assert [entry["version"] for entry in data["entries"]] == [change.version for change in expected]
    assert data["head"] == store.version() == data["entries"][0]["version"]
    first = data["entries"][-1]
    assert first["kind"] == "apply"
    assert first["actor"].startswith("batch ")  # a worker's write names its batch and sample
    assert first["counts"]["ADD"] == sum(1 for op in expected[-1].operations if op.type == "ADD")
    assert first["effect"]["added"] == sorted(expected[-1].after, key=lambda s: int(s.rsplit("-", 1)[1]))
    assert first["diff"] == f"/skillbooks/support/diff?from={first['version'] - 1}&to={first['version']}"


def test_the_timeline_pages_back_with_a_before_cursor(
    crafted: tuple[RunningConsole, RedisSkillbookStore],
) -> None:
    running, store = crafted
    with running.client() as client:
        first = client.get("/api/skillbooks/support/history?limit=2").json()
        second = client.get(f"/api/skillbooks/support/history?limit=2&before={first['older_before']}").json()
        last = client.get(f"/api/skillbooks/support/history?limit=2&before={second['older_before']}").json()
    assert [e["version"] for e in first["entries"]] == [5, 4]
    assert [e["version"] for e in second["entries"]] == [c.version for c in store.history(2, before=4)]
    assert [e["version"] for e in second["entries"]] == [3, 2]
    assert [e["version"] for e in last["entries"]] == [1]
    assert last["older_before"] is None
    assert (first["has_newer"], second["has_newer"]) == (False, True)
    assert second["newer_before"] is None  # the newer page is the first one
    assert last["newer_before"] == 4


def test_a_timeline_entry_says_what_its_version_did_and_carries_its_labels(
    crafted: tuple[RunningConsole, RedisSkillbookStore],
) -> None:
    running, store = crafted
    store.labels.set("prod", 3, actor="user:setup")
    store.labels.set("canary", 3, actor="user:setup")
    with running.client() as client:
        entries = {e["version"]: e for e in client.get("/api/skillbooks/support/history").json()["entries"]}
        page = client.get("/skillbooks/support/history")
    assert entries[3]["labels"] == ["canary", "prod"]
    assert entries[4]["labels"] == []
    assert entries[3]["counts"] == {"ADD": 1, "UPDATE": 1}
    assert entries[3]["effect"] == {"added": ["reading-00003"], "removed": [], "changed": ["math-00002"]}
    assert entries[4]["effect"]["removed"] == ["math-00001"]
    assert page.status_code == 200
    assert page.text.count('data-version="') == 5
    assert 'href="/skillbooks/support/skills/reading-00003"' in page.text
    assert 'href="/skillbooks/support/diff?from=2&amp;to=3"' in page.text


def test_the_timeline_refuses_a_bad_limit_or_cursor_and_names_an_unknown_skillbook(
    crafted: tuple[RunningConsole, RedisSkillbookStore],
) -> None:
    running, _ = crafted
    with running.client() as client:
        too_many = client.get("/api/skillbooks/support/history?limit=501")
        zero = client.get("/api/skillbooks/support/history?before=0")
        unknown = client.get("/api/skillbooks/nothing-here/history")
    assert too_many.status_code == 400
    assert "limit=501" in too_many.json()["message"]
    assert zero.status_code == 400
    assert "before=0" in zero.json()["message"]
    assert unknown.status_code == 404
    assert "nothing-here" in unknown.json()["message"]


# -- diffs -------------------------------------------------------------------------------------


def test_a_diff_shows_each_changed_skill_at_both_versions_as_the_store_does(
    crafted: tuple[RunningConsole, RedisSkillbookStore],
) -> None:
    running, store = crafted
    with running.client() as client:
        data = client.get("/api/skillbooks/support/diff?from=1&to=4").json()
        page = client.get("/skillbooks/support/diff?from=1&to=4")
    expected = store.diff(1, 4)
    rows = {row["id"]: row for row in data["skills"]}
    assert set(rows) == set(expected)
    assert all((rows[s]["before"], rows[s]["after"]) == expected[s] for s in expected)
    assert {s: row["change"] for s, row in rows.items()} == {
        "math-00001": "removed",
        "math-00002": "changed",
        "reading-00003": "added",
    }
    assert rows["math-00002"]["fields"] == ["content"]
    assert data["summary"] == {"added": 1, "removed": 1, "changed": 1}
    assert page.status_code == 200
    assert page.text.count('data-skill="') == 3
    assert 'class="field-changed" data-field="content"' in page.text


def test_a_diff_reads_labels_and_head_and_runs_either_way(
    crafted: tuple[RunningConsole, RedisSkillbookStore],
) -> None:
    running, store = crafted
    store.labels.set("prod", 2, actor="user:setup")
    with running.client() as client:
        by_label = client.get("/api/skillbooks/support/diff?from=prod&to=head").json()
        backwards = client.get("/api/skillbooks/support/diff?from=5&to=2").json()
    assert (by_label["from"], by_label["to"]) == (
        {"ref": "prod", "version": 2},
        {"ref": "head", "version": 5},
    )
    assert [(r["id"], r["before"], r["after"]) for r in by_label["skills"]] == [
        (r["id"], r["before"], r["after"]) for r in skill_changes(store.diff(2, 5))
    ]
    changes = {row["id"]: row["change"] for row in backwards["skills"]}
    assert changes["reading-00003"] == "removed"  # added after 2: going back to 2 removes it
    assert changes["math-00001"] == "added"


def test_a_diff_refuses_versions_out_of_range_and_bad_or_unknown_labels(
    crafted: tuple[RunningConsole, RedisSkillbookStore],
) -> None:
    running, _ = crafted
    with running.client() as client:
        beyond = client.get("/api/skillbooks/support/diff?from=1&to=9")
        missing = client.get("/api/skillbooks/support/diff?to=2")
        bad = client.get("/api/skillbooks/support/diff?from=no%20such&to=2")
        unknown = client.get("/api/skillbooks/support/diff?from=staging&to=2")
        page = client.get("/skillbooks/support/diff?from=1&to=9")
    assert beyond.status_code == 400
    assert "to=9" in beyond.json()["message"]
    assert "versions 0 to 5" in beyond.json()["message"]
    assert missing.status_code == 400
    assert "from is missing" in missing.json()["message"]
    assert bad.status_code == 400
    assert "from='no such'" in bad.json()["message"]
    assert unknown.status_code == 404
    assert "no label 'staging'" in unknown.json()["message"]
    assert page.status_code == 400
    assert "to=9" in page.text


def test_a_diff_lists_at_most_limit_skills_and_counts_the_rest(
    crafted: tuple[RunningConsole, RedisSkillbookStore],
) -> None:
    running, _ = crafted
    with running.client() as client:
        data = client.get("/api/skillbooks/support/diff?from=0&to=5&limit=1").json()
        page = client.get("/skillbooks/support/diff?from=0&to=5&limit=1")
    assert [row["id"] for row in data["skills"]] == ["math-00002"]  # the oldest first
    assert data["not_shown"] == 1
    assert data["summary"]["added"] == 2  # counted over every skill, listed or not
    assert 'id="diff-not-shown"' in page.text


def test_a_diff_past_the_trimmed_change_log_is_refused_naming_the_versions(
    idle_service: Service, redis_client: redis.Redis
) -> None:
    prefix = idle_service.runtime.settings.queue_prefix
    store = RedisSkillbookStore(redis_client, "trimmed", prefix=prefix, changelog_maxlen=1)
    for number in range(120):  # MAXLEN ~ trims whole nodes: write enough for one to go
        store.apply(batch(add(f"Skill number {number}.")))
    with running_console(idle_service) as running, running.client() as client:
        response = client.get("/api/skillbooks/trimmed/diff?from=1&to=120")
    assert response.status_code == 400
    assert "no longer reaches back to version 2" in response.json()["message"]


# -- rollback ----------------------------------------------------------------------------------


def test_the_rollback_confirmation_names_what_is_restored_removed_and_re_added(
    crafted: tuple[RunningConsole, RedisSkillbookStore],
) -> None:
    running, store = crafted
    with running.client() as client:
        data = client.get("/api/skillbooks/support/rollback?to=2").json()
        page = client.get("/skillbooks/support/rollback?to=2")
    assert data["expect"] == data["head"] == 5
    words = {row["id"]: row["rollback"] for row in data["skills"]}
    assert words == {"math-00001": "re-added", "math-00002": "restored", "reading-00003": "removed"}
    assert data["counts"] == {"restored": 1, "removed": 1, "re-added": 1}
    assert store.version() == 5  # the confirmation changes nothing
    assert 'name="expect" value="5"' in page.text
    assert 'id="confirm-rollback"' in page.text


def test_a_rollback_through_the_api_restores_the_version_and_the_change_log_names_the_user(
    crafted: tuple[RunningConsole, RedisSkillbookStore],
) -> None:
    running, store = crafted
    at_two = store.snapshot_at(2)[1].to_dict()
    with running.client() as client:
        response = api_post(
            client, "/api/skillbooks/support/rollback", {"to": 2, "expect": 5, "note": "bad tag"}
        )
    assert response.status_code == 200, response.text
    assert response.json()["version"] == 6
    assert store.diff(2, 6) == {}
    assert store.snapshot_at(6)[1].to_dict()["skills"] == at_two["skills"]
    [entry] = store.history(1)
    assert entry.kind.value == "rollback"
    assert entry.source == {"actor": running.ops.name, "via": "console", "note": "bad tag", "rollback_to": 2}


def test_a_rollback_or_label_change_without_expect_is_refused_with_400_and_changes_nothing(
    crafted: tuple[RunningConsole, RedisSkillbookStore],
) -> None:
    running, store = crafted
    store.labels.set("prod", 2, actor="user:tests")
    with running.client() as client:
        rollback = api_post(client, "/api/skillbooks/support/rollback", {"to": 2})
        form = post_form(client, "/skillbooks/support/rollback", {"to": "2"})
        empty = api_post(client, "/api/skillbooks/support/rollback", {"to": 2, "expect": ""})
        move = api_post(client, "/api/skillbooks/support/labels/prod", {"to": 3})
        delete = api_post(client, "/api/skillbooks/support/labels/prod/delete", {})
    for response in (rollback, form, empty, move, delete):
        assert response.status_code == 400, response.text
    assert rollback.json()["error"] == "invalid"
    assert "rolling back skillbook 'support': expect is required" in rollback.json()["message"]
    assert "moving label 'prod' of skillbook 'support': expect is required" in move.json()["message"]
    assert "deleting label 'prod'" in delete.json()["message"]
    assert store.version() == 5
    assert store.labels.all() == {"prod": 2}


def test_a_rollback_confirmed_against_an_older_head_is_refused_with_409(
    crafted: tuple[RunningConsole, RedisSkillbookStore],
) -> None:
    running, store = crafted
    with running.client() as client:
        response = api_post(client, "/api/skillbooks/support/rollback", {"to": 2, "expect": 4})
        form = post_form(client, "/skillbooks/support/rollback", {"to": "2", "expect": "4"})
    assert response.status_code == 409
    message = response.json()["message"]
    assert "head at version 4" in message
    assert "at 5 now" in message
    assert form.status_code == 409
    assert store.version() == 5


def test_a_rollback_form_redirects_to_the_timeline_with_a_notice(
    crafted: tuple[RunningConsole, RedisSkillbookStore],
) -> None:
    running, store = crafted
    with running.client() as client:
        response = post_form(client, "/skillbooks/support/rollback", {"to": "3", "expect": "5"})
    assert response.status_code == 303
    assert response.headers["location"] == "/skillbooks/support/history?notice=rolled-back"
    assert store.version() == 6
    assert (store.history(1)[0].source or {})["rollback_to"] == 3


# -- labels ------------------------------------------------------------------------------------


def test_the_labels_page_lists_each_label_and_the_label_log(
    crafted: tuple[RunningConsole, RedisSkillbookStore],
) -> None:
    running, store = crafted
    store.labels.set("prod", 2, actor="user:ann", note="first good one")
    store.labels.set("canary", 5, actor="user:bob")
    with running.client() as client:
        data = client.get("/api/skillbooks/support/labels").json()
        page = client.get("/skillbooks/support/labels")
    assert data["labels"] == [
        {"label": "canary", "version": 5, "behind": 0},
        {"label": "prod", "version": 2, "behind": 3},
    ]
    assert [(m["label"], m["to_version"], m["actor"]) for m in data["moves"]] == [
        ("canary", 5, "user:bob"),
        ("prod", 2, "user:ann"),
    ]
    assert data["moves"][1]["note"] == "first good one"
    assert 'data-label="prod" data-version="2"' in page.text


def test_a_label_move_confirmation_names_the_move_and_the_skills_its_readers_see_change(
    crafted: tuple[RunningConsole, RedisSkillbookStore],
) -> None:
    running, store = crafted
    store.labels.set("prod", 2, actor="user:setup")
    with running.client() as client:
        data = client.get("/api/skillbooks/support/labels/prod/move?to=head").json()
        new = client.get("/api/skillbooks/support/labels/canary/move?to=3").json()
    assert (data["from_version"], data["to_version"], data["expect"], data["new"]) == (2, 5, 2, False)
    assert [row["id"] for row in data["skills"]] == [row["id"] for row in skill_changes(store.diff(2, 5))]
    assert (new["from_version"], new["to_version"], new["expect"], new["new"]) == (None, 3, "", True)
    assert store.labels.get("canary") is None  # the confirmation changes nothing


def test_a_label_move_through_the_api_is_logged_as_the_user_and_refused_when_stale(
    crafted: tuple[RunningConsole, RedisSkillbookStore],
    redis_client: redis.Redis,
) -> None:
    running, store = crafted
    with running.client() as client:
        created = api_post(
            client, "/api/skillbooks/support/labels/prod", {"to": 2, "expect": "", "note": "ok"}
        )
        moved = api_post(client, "/api/skillbooks/support/labels/prod", {"to": "head", "expect": 2})
        stale = api_post(client, "/api/skillbooks/support/labels/prod", {"to": 3, "expect": 2})
        again = api_post(client, "/api/skillbooks/support/labels/canary", {"to": 1, "expect": 4})
    assert created.status_code == 200, created.text
    assert moved.status_code == 200, moved.text
    assert store.labels.get("prod") == 5
    [last, first] = store.labels.history("prod")
    ops = running.ops.name
    assert (first.from_version, first.to_version, first.actor, first.note) == (None, 2, ops, "ok")
    assert (last.from_version, last.to_version, last.actor) == (2, 5, ops)
    assert stale.status_code == 409
    assert "showed it at version 2, but it is at version 5" in stale.json()["message"]
    assert again.status_code == 409  # expected at 4, but canary is not set
    assert store.labels.get("canary") is None
    prefix = running.app.state.console.prefix
    assert any(e.action == "label-move" and e.user == ops for e in read_audit(redis_client, prefix))


def test_a_label_move_refuses_a_bad_label_or_version(
    crafted: tuple[RunningConsole, RedisSkillbookStore],
) -> None:
    running, _ = crafted
    with running.client() as client:
        head_label = client.get("/api/skillbooks/support/labels/head/move?to=1")
        zero = client.get("/api/skillbooks/support/labels/prod/move?to=0")
        beyond = api_post(client, "/api/skillbooks/support/labels/prod", {"to": 6, "expect": ""})
    assert head_label.status_code == 400
    assert "'head' is the current version itself" in head_label.json()["message"]
    assert zero.status_code == 400
    assert "to=0" in zero.json()["message"]
    assert beyond.status_code == 400
    assert "to=6" in beyond.json()["message"]


def test_the_new_label_form_opens_that_labels_move_confirmation(
    crafted: tuple[RunningConsole, RedisSkillbookStore],
) -> None:
    running, _ = crafted
    with running.client() as client:
        opened = client.get("/skillbooks/support/labels/new?label=canary&to=3", follow_redirects=False)
        bad = client.get("/skillbooks/support/labels/new?label=9lives&to=3", follow_redirects=False)
    assert opened.status_code == 303
    assert opened.headers["location"] == "/skillbooks/support/labels/canary/move?to=3"
    assert bad.status_code == 400


def test_a_label_delete_is_confirmed_logged_and_refused_when_stale(
    crafted: tuple[RunningConsole, RedisSkillbookStore],
) -> None:
    running, store = crafted
    store.labels.set("prod", 3, actor="user:setup")
    with running.client() as client:
        confirmation = client.get("/api/skillbooks/support/labels/prod/delete").json()
        unknown = client.get("/api/skillbooks/support/labels/staging/delete")
        stale = api_post(client, "/api/skillbooks/support/labels/prod/delete", {"expect": 2})
        deleted = api_post(
            client, "/api/skillbooks/support/labels/prod/delete", {"expect": 3, "note": "gone"}
        )
    assert (confirmation["version"], confirmation["expect"]) == (3, 3)
    assert unknown.status_code == 404
    assert stale.status_code == 409
    assert deleted.status_code == 200, deleted.text
    assert store.labels.get("prod") is None
    move = store.labels.history("prod")[0]
    assert (move.from_version, move.to_version, move.actor, move.note) == (3, None, running.ops.name, "gone")
