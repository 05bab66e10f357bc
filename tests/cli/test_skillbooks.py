"""The CLI checks its arguments before connecting, loads and compares skillbooks, and speaks JSON."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import redis
from typer.testing import CliRunner

from ace_workers.cli import app
from ace_workers.core import UpdateBatch, UpdateOperation
from ace_workers.distributed import RedisSkillbookStore
from ace_workers.distributed.service import build_service, local_workers
from ace_workers.distributed.settings import WorkerSettings
from tests.support.cli import said
from tests.support.recipes import TEST_RECIPES

PREFIX = "clibooks"

# The reference framework's classic file: counters on every skill, no next_id, no decisions.
REFERENCE_FILE = {
    "skills": {
        "general-00001": {
            "id": "general-00001",
            "section": "general",
            "content": "Check units before answering.",
            "helpful": 3,
            "harmful": 1,
            "neutral": 0,
            "created_at": "2025-01-01T10:00:00+00:00",
            "updated_at": "2025-01-02T10:00:00+00:00",
        },
        "math-00002": {
            "id": "math-00002",
            "section": "math",
            "content": "Estimate before computing.",
            "helpful": 1,
            "harmful": 0,
            "neutral": 0,
            "created_at": "2025-01-01T11:00:00+00:00",
            "updated_at": "2025-01-01T11:00:00+00:00",
        },
    },
    "sections": {"general": ["general-00001"], "math": ["math-00002"]},
}


@pytest.fixture
def cli_settings() -> dict[str, str]:
    """``env`` (tests/support/cli_env.py) under this module's prefix."""
    return {"ACE_QUEUE_PREFIX": PREFIX}


def add(*contents: str, section: str = "math") -> UpdateBatch:
    return UpdateBatch(
        operations=[UpdateOperation(type="ADD", section=section, content=text) for text in contents]
    )


# -- arguments are checked before anything connects ------------------------------------------


def _traces(tmp_path: Path) -> str:
    path = tmp_path / "traces.jsonl"
    path.write_text(json.dumps({"question": "q", "answer": "a"}) + "\n")
    return str(path)


BAD_ARGUMENTS = {
    "enqueue: a name that could reach other keys": (
        lambda t: ["enqueue", _traces(t), "--skillbook", "a}:b"],
        "invalid skillbook name 'a}:b'",
    ),
    "enqueue: a recipe no worker is configured with": (
        lambda t: ["enqueue", _traces(t), "--recipe", "os:system"],
        "unknown recipe 'os:system'",
    ),
    "enqueue: a file that is not there": (
        lambda t: ["enqueue", str(t / "missing.jsonl")],
        "cannot read",
    ),
    "learn: an output folder that is not there": (
        lambda t: ["learn", _traces(t), "--out", str(t / "no" / "book.json")],
        "does not exist",
    ),
    "skillbook show: a bad name": (lambda t: ["skillbook", "show", "a b"], "invalid skillbook name 'a b'"),
    "skillbook history: a bad name": (lambda t: ["skillbook", "history", "x}y"], "invalid skillbook name"),
    "skillbook rollback: a bad name": (
        lambda t: ["skillbook", "rollback", "a}b", "--to", "1"],
        "invalid skillbook name",
    ),
    "skillbook export: an output folder that is not there": (
        lambda t: ["skillbook", "export", "book", "--out", str(t / "no" / "book.json")],
        "does not exist",
    ),
    "skillbook import: a file that is not there": (
        lambda t: ["skillbook", "import", str(t / "missing.json"), "book"],
        "missing.json",
    ),
    "skillbook diff: versions the wrong way round": (
        lambda t: ["skillbook", "diff", "book", "3", "1"],
        "give the older version first",
    ),
    "nightly add: a bad name": (
        lambda t: ["nightly", "add", _traces(t), "--skillbook", "a:b"],
        "invalid skillbook name 'a:b'",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_ARGUMENTS))
def test_a_bad_argument_is_named_before_redis_or_workers_are_looked_at(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in list(os.environ):
        if name.startswith("ACE_"):
            monkeypatch.delenv(name)
    # Nothing listens here: a command that connected first would fail on the connection.
    monkeypatch.setenv("ACE_REDIS_URL", "redis://127.0.0.1:1/0")
    arguments, expected = BAD_ARGUMENTS[case]
    result = CliRunner().invoke(app, arguments(tmp_path))
    assert result.exit_code == 2, result.output  # a usage error, not a crash
    assert expected in said(result.output)
    assert "127.0.0.1:1" not in result.output
    assert "no worker serves" not in result.output


# -- import, show, diff --------------------------------------------------------------------


def test_a_reference_file_is_imported_replaced_only_when_asked_and_rolled_back(
    tmp_path: Path, env: pytest.MonkeyPatch, redis_client: redis.Redis
) -> None:
    reference = tmp_path / "reference.json"
    reference.write_text(json.dumps(REFERENCE_FILE))
    runner = CliRunner()

    imported = runner.invoke(app, ["skillbook", "import", str(reference), "support"])
    assert imported.exit_code == 0, imported.output
    assert "2 skill(s)" in imported.output
    assert "as version 1" in imported.output
    store = RedisSkillbookStore(redis_client, "support", prefix=PREFIX)
    skill = store.export().get_skill("general-00001")
    assert skill is not None
    assert (skill.content, skill.helpful, skill.harmful) == ("Check units before answering.", 3, 1)

    again = runner.invoke(app, ["skillbook", "import", str(reference), "support"])
    assert again.exit_code == 2
    assert "skillbook 'support' exists (version 1); pass --replace" in said(again.output)
    assert store.version() == 1

    ours = tmp_path / "ours.json"
    store.apply(add("Round at the end."))
    store.export().save_to_file(ours)
    store.rollback(1)
    replaced = runner.invoke(app, ["skillbook", "import", str(ours), "support", "--replace"])
    assert replaced.exit_code == 0, replaced.output
    assert "3 skill(s)" in replaced.output
    assert len(store.export()) == 3

    history = json.loads(runner.invoke(app, ["skillbook", "history", "support", "--json"]).output)
    assert [entry["kind"] for entry in history] == ["import", "rollback", "apply", "import"]
    assert history[-1]["source"] == {"command": "skillbook import", "file": str(reference), "import": True}


def test_a_file_that_is_not_a_skillbook_is_refused_naming_it_and_nothing_is_written(
    tmp_path: Path, env: pytest.MonkeyPatch, redis_client: redis.Redis
) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('{"skills": {"x": ')
    result = CliRunner().invoke(app, ["skillbook", "import", str(broken), "support"])
    assert result.exit_code == 2
    assert "broken.json" in said(result.output)
    assert not RedisSkillbookStore(redis_client, "support", prefix=PREFIX).exists()


def test_diff_names_the_skills_added_removed_and_changed_between_two_versions(
    env: pytest.MonkeyPatch, redis_client: redis.Redis
) -> None:
    store = RedisSkillbookStore(redis_client, "support", prefix=PREFIX)
    first, second = store.apply(add("Check units.", "Cite sources.")).report.added  # version 1
    store.apply(
        UpdateBatch(
            operations=[
                UpdateOperation(type="TAG", skill_id=first, metadata={"helpful": 2}),
                UpdateOperation(type="UPDATE", skill_id=first, content="Check units twice."),
                UpdateOperation(type="REMOVE", skill_id=second),
                UpdateOperation(type="ADD", section="math", content="Estimate first."),
            ]
        )
    )  # version 2
    runner = CliRunner()

    as_json = runner.invoke(app, ["skillbook", "diff", "support", "1", "2", "--json"])
    assert as_json.exit_code == 0, as_json.output
    diff = json.loads(as_json.output)
    assert [skill["content"] for skill in diff["added"]] == ["Estimate first."]
    assert [skill["id"] for skill in diff["removed"]] == [second]
    [changed] = diff["changed"]
    assert changed["id"] == first
    assert changed["fields"] == {"content": ["Check units.", "Check units twice."], "helpful": [0, 2]}

    text = runner.invoke(app, ["skillbook", "diff", "support", "1", "2"])
    assert "1 added, 1 removed, 1 changed" in text.output
    assert f"- {second} [math] Cite sources." in text.output
    assert f"~ {first} helpful: 0 -> 2" in text.output

    beyond = runner.invoke(app, ["skillbook", "diff", "support", "1", "9"])
    assert beyond.exit_code == 2
    assert "(the current version)" in said(beyond.output)


# -- JSON for scripts, and a full skillbook shown ----------------------------------------------


def test_list_and_show_speak_json_and_show_says_when_the_skillbook_is_full(
    env: pytest.MonkeyPatch, redis_client: redis.Redis
) -> None:
    env.setenv("ACE_MAX_SKILLBOOK_SKILLS", "2")
    store = RedisSkillbookStore(redis_client, "tiny", prefix=PREFIX, max_skills=2)
    store.apply(add("Check units.", "Cite sources.", "One too many."))
    RedisSkillbookStore(redis_client, "other", prefix=PREFIX).apply(add("Estimate first."))
    runner = CliRunner()

    listed = json.loads(runner.invoke(app, ["skillbook", "list", "--json"]).output)
    assert listed == [
        {"name": "other", "version": 1, "active_skills": 1},
        {"name": "tiny", "version": 1, "active_skills": 2},
    ]

    shown = json.loads(runner.invoke(app, ["skillbook", "show", "tiny", "--json"]).output)
    assert (shown["version"], shown["active_skills"], shown["max_skills"]) == (1, 2, 2)
    assert shown["adds_skipped_full"] == 1
    assert sorted(s["content"] for s in shown["skillbook"]["skills"].values()) == [
        "Check units.",
        "Cite sources.",
    ]

    text = said(runner.invoke(app, ["skillbook", "show", "tiny"]).output)
    assert "2 of 2 active skills" in text
    assert "skillbook 'tiny' is full" in text
    assert "1 ADD(s) left out for lack of room" in text
    roomy = said(runner.invoke(app, ["skillbook", "show", "other"]).output)
    assert "is full" not in roomy


def test_status_and_dead_letters_speak_json(env: pytest.MonkeyPatch, redis_client: redis.Redis) -> None:
    env.setenv("ACE_RECIPES", TEST_RECIPES)
    service = build_service(WorkerSettings.from_env(), redis_url=os.environ["ACE_REDIS_URL"])
    runner = CliRunner()
    try:
        with local_workers(service, learn_threads=2):
            handle = service.producer.enqueue_traces(
                [{"question": "q0"}, {"question": "q1"}], "dead", recipe="failing"
            )
            handle.wait(timeout=60)
            status = runner.invoke(app, ["status", handle.batch_id, "--json"])
            letters = runner.invoke(app, ["dead-letters", "list", "--json"])
    finally:
        service.close()

    assert status.exit_code == 1, status.output  # every sample failed
    report = json.loads(status.output)
    assert (report["batch_id"], report["skillbook"], report["state"]) == (handle.batch_id, "dead", "failed")
    assert (report["total"], report["done"], report["failed"]) == (2, 0, 2)
    assert {error["step"] for error in report["errors"]} == {"Explode"}
    assert report["skillbook_fill"]["adds_skipped_full"] == 0
    parked = json.loads(letters.output)
    assert [letter["position"] for letter in parked] == [0, 1]
    assert all(letter["step"] == "Explode" for letter in parked)
    assert all("boom on purpose" in letter["error"] for letter in parked)
    assert {letter["batch_id"] for letter in parked} == {handle.batch_id}


def test_the_json_of_an_empty_list_is_still_one_document(env: pytest.MonkeyPatch) -> None:
    result = CliRunner().invoke(app, ["dead-letters", "list", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == []
