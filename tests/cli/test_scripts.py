"""What a script reads: the result alone on stdout (one JSON document with --json), the rest on stderr.

And which workers a batch needs: only those of the queues its recipe uses.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from typer.testing import CliRunner

from ace_workers.cli import app
from ace_workers.distributed.service import Service, build_service
from ace_workers.distributed.settings import WorkerSettings
from tests.support.cli import env_with_one_skillbook, run_console_script, said, write_traces
from tests.support.workers import learn_and_write_workers

PREFIX = "cliscripts"


@pytest.fixture
def learn_and_write_fleet(clean_env: pytest.MonkeyPatch, redis_url: str) -> Iterator[Service]:
    """The CLI on the test Redis, where real in-process workers serve the learn and write queues only."""
    clean_env.setenv("ACE_REDIS_URL", redis_url)
    clean_env.setenv("ACE_QUEUE_PREFIX", PREFIX)
    with learn_and_write_workers(redis_url) as service:
        yield service


def test_enqueue_prints_only_the_batch_id_and_warns_of_skipped_lines_on_stderr(
    learn_and_write_fleet: Service, tmp_path: Path
) -> None:
    traces = write_traces(tmp_path / "traces.jsonl", 3, bad_line_at=2)

    result = CliRunner().invoke(app, ["enqueue", str(traces), "--skillbook", "scripted"])

    assert result.exit_code == 0, result.output
    batch_id = result.stdout.strip()
    assert result.stdout == f"{batch_id}\n"
    assert f"skipped 1 line of {traces}: line 2 (not JSON" in said(result.stderr)
    status = learn_and_write_fleet.producer.runtime.batches.status(batch_id)
    assert (status.skillbook, status.total) == ("scripted", 3)


def test_a_trace_batch_needs_no_execute_worker_and_learn_speaks_json(
    learn_and_write_fleet: Service, tmp_path: Path
) -> None:
    traces = write_traces(tmp_path / "traces.jsonl", 3)

    result = CliRunner().invoke(app, ["learn", str(traces), "--skillbook", "learned", "--json"])

    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert (report["skillbook"], report["recipe"], report["state"]) == ("learned", "trace_analyser", "done")
    assert (report["total"], report["done"], report["failed"]) == (3, 3, 0)
    assert report["book"]["skills"]
    assert "learning learned from 3 inputs" in said(result.stderr)


def test_an_ace_batch_is_refused_naming_only_the_execute_queue_and_exits_3(
    learn_and_write_fleet: Service,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    samples = tmp_path / "samples.jsonl"
    samples.write_text(json.dumps({"question": "Solve the zorb puzzle. Input: 7061", "ground_truth": "1607"}))

    ran = run_console_script(monkeypatch, capsys, "enqueue", str(samples), "--recipe", "ace")

    assert ran.code == 3
    assert ran.out == ""
    assert ran.err.startswith(f"error: no worker serves {PREFIX}.execute (recipe 'ace' needs it); ")
    assert "--queues execute'" in ran.err
    assert len(ran.err.splitlines()) == 1


def test_enqueue_json_is_one_document_naming_the_batch(
    learn_and_write_fleet: Service, tmp_path: Path
) -> None:
    traces = write_traces(tmp_path / "traces.jsonl", 2)

    result = CliRunner().invoke(app, ["enqueue", str(traces), "--epochs", "2", "--json"])

    assert result.exit_code == 0, result.output
    sent = json.loads(result.stdout)
    assert (sent["inputs"], sent["epochs"], sent["samples"], sent["recipe"]) == (2, 2, 4, "trace_analyser")
    assert learn_and_write_fleet.producer.runtime.batches.exists(sent["batch_id"])


def test_batch_cancel_and_resume_speak_json(
    clean_env: pytest.MonkeyPatch, redis_client: redis.Redis, redis_url: str
) -> None:
    clean_env.setenv("ACE_REDIS_URL", redis_url)
    clean_env.setenv("ACE_QUEUE_PREFIX", PREFIX)
    service = build_service(WorkerSettings.from_env(), redis_url=redis_url)
    try:
        handle = service.producer.enqueue_traces([{"question": "q"}], "idle")  # no worker: it waits
    finally:
        service.close()
    runner = CliRunner()

    cancelled = runner.invoke(app, ["batch", "cancel", handle.batch_id, "--json"])
    resumed = runner.invoke(app, ["batch", "resume", handle.batch_id, "--json"])

    assert cancelled.exit_code == 0, cancelled.output
    assert json.loads(cancelled.stdout) == {
        "batch_id": handle.batch_id,
        "cancelled_now": True,
        "state": "cancelled",
        "total": 1,
        # The ledger's six states, the one sample never started counted cancelled.
        **{
            "done": 0,
            "failed": 0,
            "running": 0,
            "queued": 0,
            "waiting_for_budget": 0,
            "cancelled": 1,
            "retried": 0,
        },
    }
    assert resumed.exit_code == 0, resumed.output
    assert json.loads(resumed.stdout) == {
        "batch_id": handle.batch_id,
        "state": "cancelled",
        "sent": 0,
        "redriven": 0,
    }


def test_skillbook_import_export_and_rollback_speak_json(
    clean_env: pytest.MonkeyPatch, redis_client: redis.Redis, redis_url: str, tmp_path: Path
) -> None:
    env_with_one_skillbook(clean_env, redis_url, redis_client, PREFIX)
    runner = CliRunner()
    book = tmp_path / "book.json"

    exported = runner.invoke(app, ["skillbook", "export", "book", "--out", str(book), "--json"])
    imported = runner.invoke(app, ["skillbook", "import", str(book), "copy", "--json"])
    rolled = runner.invoke(app, ["skillbook", "rollback", "book", "--to", "0", "--json"])

    assert json.loads(exported.stdout) == {
        "name": "book",
        "version": 1,
        "skills": 1,
        "written": {"out": str(book), "markdown": None},
    }
    assert json.loads(imported.stdout) == {"name": "copy", "file": str(book), "skills": 1, "version": 1}
    assert json.loads(rolled.stdout) == {"name": "book", "restored_version": 0, "version": 2}


def test_nightly_add_and_report_speak_json(
    clean_env: pytest.MonkeyPatch, redis_client: redis.Redis, redis_url: str, tmp_path: Path
) -> None:
    clean_env.setenv("ACE_REDIS_URL", redis_url)
    clean_env.setenv("ACE_QUEUE_PREFIX", PREFIX)
    traces = write_traces(tmp_path / "traces.jsonl", 3)
    runner = CliRunner()

    added = runner.invoke(app, ["nightly", "add", str(traces), "--skillbook", "night", "--json"])
    reported = runner.invoke(app, ["nightly", "report", "night", "--json"])

    assert json.loads(added.stdout) == {"skillbook": "night", "added": 3}
    assert json.loads(reported.stdout) == {"skillbook": "night", "pending": 3, "reports": []}


def test_a_redis_that_does_not_answer_exits_3_in_one_line(
    clean_env: pytest.MonkeyPatch, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    clean_env.setenv("ACE_REDIS_URL", "redis://127.0.0.1:1/0")  # nothing listens on port 1

    ran = run_console_script(monkeypatch, capsys, "status", "some-batch")

    assert ran.code == 3
    assert ran.out == ""
    assert ran.err.startswith("error: Redis at redis://127.0.0.1:1/0 did not answer")
    assert len(ran.err.splitlines()) == 1


@pytest.mark.parametrize(
    "args",
    [
        ["status", "some-batch"],
        ["skillbook", "show", "demo"],
        ["skillbook", "list"],
        ["dead-letters", "list"],
        ["nightly", "report", "demo"],
        ["batch", "cancel", "some-batch"],
    ],
    ids=" ".join,
)
def test_a_command_that_reads_a_shared_redis_refuses_to_run_without_one(
    args: list[str],
    clean_env: pytest.MonkeyPatch,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    ran = run_console_script(monkeypatch, capsys, *args)

    assert ran.code == 2
    assert ran.out == ""
    assert len(ran.err.splitlines()) == 1
    assert "needs ACE_REDIS_URL, or ACE_EMBEDDED_REDIS_DIR" in ran.err
