"""``skillbook evaluate`` and ``skillbook label promote``: text and JSON, exit codes, bad task files."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import redis

from ace_workers.cli.exit_codes import EXIT_DONE, EXIT_REFUSED, EXIT_USAGE
from ace_workers.core import Skillbook, UpdateBatch, UpdateOperation
from ace_workers.distributed import RedisSkillbookStore
from ace_workers.sim import TOPICS, failure_traces, make_tasks, misleading_traces
from tests.support.cli import run_console_script, said
from tests.support.workers import running_service

PREFIX = "clieval"
ZORB, FLUX = TOPICS[0], TOPICS[1]


def table_row(line: str) -> str:
    """A line of a rich table as its cells' words, one space apart."""
    return said(line.replace("┃", " "))


@pytest.fixture
def cli_settings() -> dict[str, str]:
    """``env`` (tests/support/cli_env.py) under this module's prefix; the sim agent trusts a skill at once."""
    return {"ACE_QUEUE_PREFIX": PREFIX, "ACE_SIM_TRUST_THRESHOLD": "0"}


@pytest.fixture
def store(redis_client: redis.Redis) -> RedisSkillbookStore:
    """Skillbook "book": version 1 states the zorb and flux rules, version 2 the wrong zorb rule."""
    book = Skillbook()
    zorb = book.add_skill("zorb", ZORB.rule)
    book.add_skill("flux", FLUX.rule)
    store = RedisSkillbookStore(redis_client, "book", prefix=PREFIX)
    store.import_skillbook(book)
    store.apply(
        UpdateBatch(
            reasoning="misled",
            operations=[UpdateOperation(type="UPDATE", skill_id=zorb.id, content=ZORB.wrong_rule)],
        )
    )
    return store


@pytest.fixture
def tasks(tmp_path: Path) -> Path:
    """20 tasks, 10 zorb and 10 flux: version 1 answers all, version 2 the flux half."""
    path = tmp_path / "tasks.jsonl"
    path.write_text(
        "".join(
            json.dumps({"question": t.question, "context": t.context, "ground_truth": t.ground_truth}) + "\n"
            for t in make_tasks(20, seed=3, topics=[ZORB, FLUX])
        )
    )
    return path


def test_evaluate_shows_the_versions_side_by_side_and_records_the_evaluation(
    env: pytest.MonkeyPatch,
    store: RedisSkillbookStore,
    tasks: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    store.labels.set("prod", 1, actor="user:ann")
    store.labels.set("canary", 2, actor="user:ann")
    ran = run_console_script(
        monkeypatch,
        capsys,
        "skillbook",
        "evaluate",
        "book",
        "--label",
        "prod",
        "--label",
        "canary",
        "--tasks",
        str(tasks),
        "--actor",
        "ann",
    )
    assert ran.code == EXIT_DONE, ran.err
    lines = [table_row(line) for line in ran.out.splitlines()]
    assert "prod canary" in lines
    assert "accuracy 100.0% 50.0%" in lines
    assert "right 20/20 10/20" in lines
    assert "version 1 2" in lines
    assert "evaluating prod" in said(ran.err)  # the progress, on stderr
    (recorded,) = store.evaluations.recent()
    assert recorded["labels"] == {"prod": 1, "canary": 2}
    assert recorded["actor"] == "user:ann"
    assert f"recorded as evaluation {recorded['id']}" in said(ran.out)


def test_evaluate_speaks_json_with_the_tasks_digest_and_tokens(
    env: pytest.MonkeyPatch,
    store: RedisSkillbookStore,
    tasks: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    ran = run_console_script(
        monkeypatch, capsys, "skillbook", "evaluate", "book", "--version", "1", "--version", "2",
        "--tasks", str(tasks), "--json",
    )  # fmt: skip
    assert ran.code == EXIT_DONE, ran.err
    report = json.loads(ran.out)
    assert report["tasks"] == {
        "file": str(tasks),
        "digest": "sha256:" + hashlib.sha256(tasks.read_bytes()).hexdigest(),
        "count": 20,
    }
    assert report["versions"] == [1, 2]
    assert [(r["name"], r["accuracy"], r["correct"]) for r in report["results"]] == [
        ("v1", 1.0, 20.0),
        ("v2", 0.5, 10.0),
    ]
    assert all(r["tokens"]["total"] > 0 for r in report["results"])
    assert report["model"] == "sim"
    assert store.evaluations.recent()[0]["id"] == report["id"]


def test_promote_if_better_refuses_a_worse_candidate_with_exit_4(
    env: pytest.MonkeyPatch,
    store: RedisSkillbookStore,
    tasks: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    store.labels.set("prod", 1, actor="user:ann")
    store.labels.set("canary", 2, actor="user:ann")
    args = (
        "skillbook",
        "label",
        "promote",
        "book",
        "canary",
        "--to",
        "prod",
        "--if-better",
        "--tasks",
        str(tasks),
    )
    ran = run_console_script(monkeypatch, capsys, *args)
    assert ran.code == EXIT_REFUSED
    assert "refused: label 'prod' of skillbook 'book' stays at version 1;" in said(ran.out)
    assert "candidate 'canary' (version 2) 50.0% against 'prod' (version 1) 100.0% on 20 tasks" in said(
        ran.out
    )
    assert store.labels.get("prod") == 1
    ran = run_console_script(monkeypatch, capsys, *args, "--json")
    assert ran.code == EXIT_REFUSED
    result = json.loads(ran.out)
    assert result["decision"] == "refused"
    assert result["move"] is None
    assert [r["promotion"]["decision"] for r in store.evaluations.recent()] == ["refused", "refused"]
    assert [m.to_version for m in store.labels.history("prod")] == [1]


def test_promote_if_better_moves_a_better_candidate_and_logs_its_evaluation(
    env: pytest.MonkeyPatch,
    store: RedisSkillbookStore,
    tasks: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    store.labels.set("prod", 2, actor="user:ann")
    store.labels.set("canary", 1, actor="user:ann")
    ran = run_console_script(
        monkeypatch, capsys, "skillbook", "label", "promote", "book", "canary", "--to", "prod",
        "--if-better", "--tasks", str(tasks), "--margin", "0.25", "--note", "fixes zorb", "--actor", "bob",
    )  # fmt: skip
    assert ran.code == EXIT_DONE, ran.err
    assert "promoted: label 'prod' of skillbook 'book' moved from version 2 to version 1 ('canary')" in said(
        ran.out
    )
    move = store.labels.history("prod")[0]
    assert (move.from_version, move.to_version, move.actor, move.note) == (2, 1, "user:bob", "fixes zorb")
    assert move.evaluation is not None
    assert move.evaluation["promotion"]["margin"] == 0.25


def test_promote_without_if_better_moves_the_label_unconditionally(
    env: pytest.MonkeyPatch,
    store: RedisSkillbookStore,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    store.labels.set("prod", 1, actor="user:ann")
    store.labels.set("canary", 2, actor="user:ann")
    ran = run_console_script(
        monkeypatch, capsys, "skillbook", "label", "promote", "book", "canary", "--to", "prod", "--json"
    )
    assert ran.code == EXIT_DONE, ran.err
    assert json.loads(ran.out)["decision"] == "promoted"
    assert store.labels.get("prod") == 2
    assert store.labels.history("prod")[0].evaluation is None
    assert store.evaluations.recent() == []
    ran = run_console_script(
        monkeypatch, capsys, "skillbook", "label", "promote", "book", "canary", "--to", "prod"
    )
    assert ran.code == EXIT_DONE
    assert "unchanged: 'prod' already points at version 2" in said(ran.out)


@pytest.mark.parametrize(
    ("content", "error"),
    [
        ('{"question": "q", "ground_truth": "a"}\n\n{not json\n', "tasks.jsonl:3: not JSON"),
        ('{"question": "q"}\n', "tasks.jsonl:1: 'ground_truth' must be a non-empty string"),
        ('{"question": "q", "ground_truth": "a", "answer": "b"}\n', "tasks.jsonl:1: unknown field answer"),
        ('["q", "a"]\n', "tasks.jsonl:1: a JSON list, not a task object"),
        ("\n\n", "tasks.jsonl: holds no task"),
    ],
)
def test_a_bad_task_file_is_named_with_its_line_before_anything_runs(
    env: pytest.MonkeyPatch,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    content: str,
    error: str,
) -> None:
    path = tmp_path / "tasks.jsonl"
    path.write_text(content)
    monkeypatch.delenv("ACE_REDIS_URL")  # refused before Redis is looked for
    ran = run_console_script(
        monkeypatch, capsys, "skillbook", "evaluate", "book", "--version", "1", "--tasks", str(path)
    )
    assert ran.code == EXIT_USAGE
    assert error in said(ran.err)


def test_unknown_labels_and_missing_options_are_usage_errors(
    env: pytest.MonkeyPatch,
    store: RedisSkillbookStore,
    tasks: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    store.labels.set("prod", 1, actor="user:ann")
    ran = run_console_script(
        monkeypatch, capsys, "skillbook", "evaluate", "book", "--label", "canary", "--tasks", str(tasks)
    )
    assert ran.code == EXIT_USAGE
    assert "skillbook 'book' has no label 'canary' (its labels: prod)" in said(ran.err)
    ran = run_console_script(
        monkeypatch, capsys, "skillbook", "evaluate", "book", "--version", "9", "--tasks", str(tasks)
    )
    assert ran.code == EXIT_USAGE
    assert "no version 9" in said(ran.err)
    ran = run_console_script(monkeypatch, capsys, "skillbook", "evaluate", "book", "--tasks", str(tasks))
    assert ran.code == EXIT_USAGE
    assert "name at least one --version or --label" in said(ran.err)
    ran = run_console_script(
        monkeypatch, capsys, "skillbook", "label", "promote", "book", "canary", "--to", "prod", "--if-better"
    )
    assert ran.code == EXIT_USAGE
    assert "--if-better evaluates on a task file: give --tasks FILE" in said(ran.err)
    ran = run_console_script(
        monkeypatch,
        capsys,
        "skillbook",
        "label",
        "promote",
        "book",
        "canary",
        "--to",
        "prod",
        "--if-better",
        "--tasks",
        str(tasks),
    )
    assert ran.code == EXIT_USAGE
    assert "skillbook 'book' has no label 'canary'" in said(ran.err)
    assert store.evaluations.recent() == []


def test_a_harmful_rule_learned_on_the_fleet_is_caught_and_its_promotion_refused(
    env: pytest.MonkeyPatch,
    redis_url: str,
    redis_client: redis.Redis,
    tasks: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    with running_service(redis_url) as service:
        store = service.runtime.store("fleet")
        # The misleading traces one at a time: each is a vote against the good rule until it has
        # harmed more than helped (it helped at most 3 times); the next one replaces it.
        misleading = [[trace] for trace in misleading_traces(8, topics=[ZORB])]
        for traces in (failure_traces(8, topics=[ZORB, FLUX]), *misleading):
            status = service.producer.enqueue_traces(traces, "fleet").wait(timeout=60)
            assert status.failed == 0
            if not store.labels.all():
                store.labels.set("prod", store.version(), actor="user:ann")  # the good rules
        store.labels.set("canary", store.version(), actor="user:ann")  # the head: zorb's rule is wrong
        prefix = service.runtime.settings.queue_prefix
    env.setenv("ACE_QUEUE_PREFIX", prefix)
    store = RedisSkillbookStore(redis_client, "fleet", prefix=prefix)  # the workers are gone
    good = store.labels.require("prod")
    ran = run_console_script(
        monkeypatch, capsys, "skillbook", "evaluate", "fleet", "--label", "prod", "--label", "canary",
        "--tasks", str(tasks), "--json",
    )  # fmt: skip
    assert ran.code == EXIT_DONE, ran.err
    assert [(r["name"], r["accuracy"]) for r in json.loads(ran.out)["results"]] == [
        ("prod", 1.0),
        ("canary", 0.5),
    ]
    ran = run_console_script(
        monkeypatch, capsys, "skillbook", "label", "promote", "fleet", "canary", "--to", "prod",
        "--if-better", "--tasks", str(tasks),
    )  # fmt: skip
    assert ran.code == EXIT_REFUSED
    assert store.labels.require("prod") == good
    _, served = store.snapshot_of("prod")
    assert [s.content for s in served.skills() if s.section == "zorb"] == [ZORB.rule]
