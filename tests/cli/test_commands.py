"""The distributed commands of ace-workers, run as a user would."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis
from typer.testing import CliRunner

from ace_workers.cli import app
from ace_workers.core import Skillbook
from ace_workers.distributed import RedisSkillbookStore
from tests.support.cli import write_traces
from tests.support.crafted import park_letter
from tests.support.recipes import TEST_RECIPES
from tests.support.schema0 import stamp_current_schema
from tests.support.waiting import wait_for


def test_learn_on_an_embedded_redis_skips_bad_lines_and_writes_the_skillbook(
    tmp_path: Path, clean_env: pytest.MonkeyPatch
) -> None:
    traces = write_traces(tmp_path / "traces.jsonl", 9, bad_line_at=2)
    out, markdown = tmp_path / "book.json", tmp_path / "book.md"
    result = CliRunner().invoke(
        app,
        [
            "learn",
            str(traces),
            "--skillbook",
            "cli",
            "--model",
            "sim",
            "--out",
            str(out),
            "--markdown",
            str(markdown),
        ],
    )
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())  # rich wraps long lines
    assert f"skipped 1 line of {traces}: line 2 (not JSON" in said
    assert "9 done, 0 failed" in said
    assert "deduplication is off: set ACE_DEDUP_PROVIDER=sentence_transformers" in said
    book = Skillbook.load_from_file(out)
    assert sorted(s.section for s in book.skills()) == ["flux", "quill", "zorb"]
    assert markdown.read_text() == book.as_markdown()


def test_the_console_script_turns_a_redis_that_is_down_into_one_clear_line(tmp_path: Path) -> None:
    traces = write_traces(tmp_path / "traces.jsonl", 2)
    env = {"PATH": "/usr/bin:/bin", "ACE_REDIS_URL": "redis://127.0.0.1:1/0"}
    done = subprocess.run(
        [sys.executable, "-c", "from ace_workers.cli import main; main()", "learn", str(traces)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert done.returncode == 3  # infrastructure unreachable
    assert done.stderr.startswith("error: ")
    assert len(done.stderr.splitlines()) == 1
    assert "127.0.0.1:1" in done.stderr
    assert "Traceback" not in done.stderr


def test_enqueue_without_workers_is_refused(
    tmp_path: Path, clean_env: pytest.MonkeyPatch, redis_client: redis.Redis, redis_url: str
) -> None:
    traces = write_traces(tmp_path / "traces.jsonl", 2)
    clean_env.setenv("ACE_REDIS_URL", redis_url)
    clean_env.setenv("ACE_QUEUE_PREFIX", "clinoworkers")
    clean_env.setenv("ACE_WORKER_REPLY_SECONDS", "0.3")
    started = time.monotonic()
    result = CliRunner().invoke(app, ["enqueue", str(traces), "--skillbook", "x"])
    assert result.exit_code != 0
    # trace_analyser runs on learn and write only: an execute worker is not asked for.
    assert result.exit_code == 3  # infrastructure unreachable: one line on stderr, not a traceback
    assert "no worker serves clinoworkers.learn, clinoworkers.write" in result.stderr
    # It waited for replies as long as the setting says, not the default 3 s.
    assert time.monotonic() - started < 2.5


def test_skillbook_commands_show_history_rollback_and_unknown_names(
    tmp_path: Path, clean_env: pytest.MonkeyPatch, redis_client: redis.Redis, redis_url: str
) -> None:
    from ace_workers.core import UpdateBatch, UpdateOperation
    from ace_workers.distributed import RedisSkillbookStore

    store = RedisSkillbookStore(redis_client, "shown", prefix="clitest")
    for text in ("Check units.", "Estimate first."):
        store.apply(UpdateBatch(operations=[UpdateOperation(type="ADD", section="math", content=text)]))
    clean_env.setenv("ACE_REDIS_URL", redis_url)
    clean_env.setenv("ACE_QUEUE_PREFIX", "clitest")
    stamp_current_schema(redis_client, "clitest")  # as this version's first process did
    runner = CliRunner()

    shown = runner.invoke(app, ["skillbook", "show", "shown"])
    assert shown.exit_code == 0
    assert "version 2" in shown.output
    assert "Estimate first." in shown.output

    history = runner.invoke(app, ["skillbook", "history", "shown"])
    assert history.exit_code == 0
    assert "ADD math" in history.output

    rolled = runner.invoke(app, ["skillbook", "rollback", "shown", "--to", "1"])
    assert rolled.exit_code == 0
    assert "now version 3" in rolled.output
    assert [s.content for s in store.export().skills()] == ["Check units."]

    exported = runner.invoke(app, ["skillbook", "export", "shown", "--out", str(tmp_path / "x.json")])
    assert exported.exit_code == 0
    assert len(Skillbook.load_from_file(tmp_path / "x.json")) == 1

    unknown = runner.invoke(app, ["skillbook", "show", "nope"])
    assert unknown.exit_code != 0
    assert "no skillbook named 'nope'" in unknown.output
    assert "shown" in unknown.output


def test_status_and_dead_letters_list_and_retry(
    tmp_path: Path, clean_env: pytest.MonkeyPatch, redis_client: redis.Redis, redis_url: str
) -> None:
    from ace_workers.distributed.service import build_service, local_workers
    from ace_workers.distributed.settings import WorkerSettings
    from ace_workers.distributed.store.keys import dead_letters_key

    clean_env.setenv("ACE_REDIS_URL", redis_url)
    clean_env.setenv("ACE_QUEUE_PREFIX", "clidead")
    clean_env.setenv("ACE_RECIPES", TEST_RECIPES)
    service = build_service(WorkerSettings.from_env(), redis_url=redis_url)
    traces = [{"question": f"q{i}"} for i in range(2)]
    runner = CliRunner()
    with local_workers(service, learn_threads=2):
        handle = service.producer.enqueue_traces(traces, "dead", recipe="failing")
        handle.wait(timeout=60)

        status = runner.invoke(app, ["status", handle.batch_id])
        said = " ".join(status.output.split())
        assert status.exit_code == 1  # every sample failed
        assert ": failed, 0 done, 2 failed" in said
        assert "Explode: RuntimeError: boom" in said

        listed = runner.invoke(app, ["dead-letters", "list"])
        assert listed.exit_code == 0
        assert listed.output.count("Explode: RuntimeError: boom on purpose") == 2

        retried = runner.invoke(app, ["dead-letters", "retry"])
        assert retried.exit_code == 0
        assert "2 messages sent back" in retried.output
        key = dead_letters_key("clidead")
        # The retried steps ran again and failed again.
        wait_for(lambda: redis_client.llen(key) >= 2, 30, "the retried letters to come back", every=0.05)
    service.close()
    unknown = runner.invoke(app, ["status", "nope"])
    assert unknown.exit_code != 0
    assert "no batch 'nope'" in unknown.output


def test_dead_letters_retry_keeps_a_letter_whose_batch_expired_and_says_so_in_one_line(
    clean_env: pytest.MonkeyPatch, redis_client: redis.Redis, redis_url: str
) -> None:
    from ace_workers.distributed.store.keys import dead_letters_key

    clean_env.setenv("ACE_REDIS_URL", redis_url)
    clean_env.setenv("ACE_QUEUE_PREFIX", "cliexpired")
    stamp_current_schema(redis_client, "cliexpired")  # as this version's first process did
    park_letter(redis_client, "cliexpired", recipe="trace_analyser", batch_id="expired")
    retried = CliRunner().invoke(app, ["dead-letters", "retry"])
    assert retried.exit_code == 1
    assert retried.stdout == "0 messages sent back\n"
    assert retried.stderr == (
        "kept 0 (ReflectStep): batch 'expired' no longer exists (a batch's records expire "
        "ACE_RESULT_TTL_SECONDS after it finished); the letter stays parked\n"
    )
    assert redis_client.llen(dead_letters_key("cliexpired")) == 1


PARAPHRASES = {
    "units": [
        "Convert all quantities to the same unit before adding them.",
        "Before adding quantities, convert them all to the same unit.",
    ],
    "strings": [
        "Reverse the string by reading its characters from last to first.",
        "Count the vowels of the word before answering.",
    ],
}


def paraphrases_to_dedup(
    env: pytest.MonkeyPatch, client: redis.Redis, redis_url: str, sections: dict[str, list[str]]
) -> RedisSkillbookStore:
    """Skillbook 'tenant' holding ``sections`` in the test Redis, and the settings to dedup it offline."""

    env.setenv("HF_HUB_OFFLINE", "1")
    env.setenv("ACE_REDIS_URL", redis_url)
    env.setenv("ACE_DEDUP_THRESHOLD", "0.85")
    book = Skillbook()
    for section, contents in sections.items():
        for content in contents:
            book.add_skill(section, content)
    store = RedisSkillbookStore(client, "tenant")
    store.import_skillbook(book)
    stamp_current_schema(client, "ace")  # as this version's first process did
    return store


def test_skillbook_dedup_finds_paraphrases_with_the_packaged_model_and_remembers_keep(
    redis_client: redis.Redis, redis_url: str, clean_env: pytest.MonkeyPatch
) -> None:
    from ace_workers.distributed.store.embedding_cache import RedisEmbeddingCache

    store = paraphrases_to_dedup(clean_env, redis_client, redis_url, PARAPHRASES)
    runner = CliRunner()
    planned = runner.invoke(app, ["skillbook", "dedup", "tenant", "--dry-run"])
    assert planned.exit_code == 0, planned.output
    # Only the paraphrase pair is similar; the simulated SkillManager judges it distinct (KEEP).
    assert "KEEP units-00001,units-00002" in planned.output
    assert "strings" not in planned.output
    assert store.version() == 1  # a dry run changes nothing
    cached = len(RedisEmbeddingCache(redis_client, store.keys))
    assert cached == 4
    result = runner.invoke(app, ["skillbook", "dedup", "tenant"])
    assert result.exit_code == 0, result.output
    assert "1 pair kept" in result.output
    assert store.version() == 2
    assert store.export().has_keep_decision("units-00001", "units-00002")
    # The decision is remembered in Redis: the pair is not flagged again, nothing is embedded again.
    again = runner.invoke(app, ["skillbook", "dedup", "tenant"])
    assert again.exit_code == 0, again.output
    assert "0 operations planned" in again.output, again.output
    assert len(RedisEmbeddingCache(redis_client, store.keys)) == cached
    unknown = runner.invoke(app, ["skillbook", "dedup", "nobody"])
    assert unknown.exit_code != 0
    assert "no skillbook named 'nobody'" in unknown.output


def test_skillbook_dedup_speaks_json_planned_and_applied(
    redis_client: redis.Redis, redis_url: str, clean_env: pytest.MonkeyPatch
) -> None:
    paraphrases_to_dedup(clean_env, redis_client, redis_url, {"units": PARAPHRASES["units"]})
    runner = CliRunner()

    planned = runner.invoke(app, ["skillbook", "dedup", "tenant", "--dry-run", "--json"])
    applied = runner.invoke(app, ["skillbook", "dedup", "tenant", "--json"])

    plan = json.loads(planned.stdout)
    assert (plan["dry_run"], plan["version"]) == (True, 1)
    assert [(op["type"], op["skill_ids"]) for op in plan["planned"]] == [
        ("KEEP", ["units-00001", "units-00002"])
    ]
    report = json.loads(applied.stdout)
    assert (report["dry_run"], report["version"]) == (False, 2)
    assert report["applied"]["kept"] == [["units-00001", "units-00002"]]


def test_the_dedup_hint_is_given_only_while_deduplication_is_off() -> None:
    from ace_workers.cli.learn import dedup_hint
    from ace_workers.distributed.settings import WorkerSettings

    assert dedup_hint(WorkerSettings()) is not None
    assert dedup_hint(WorkerSettings(dedup_provider="sentence_transformers")) is None


def test_a_skillbook_learned_into_an_embedded_redis_folder_is_there_for_the_next_command(
    tmp_path: Path, clean_env: pytest.MonkeyPatch
) -> None:
    traces = write_traces(tmp_path / "traces.jsonl", 6)
    clean_env.setenv("ACE_EMBEDDED_REDIS_DIR", "kept")  # clean_env runs the test in tmp_path
    runner = CliRunner()

    learned = runner.invoke(app, ["learn", str(traces), "--skillbook", "demo", "--model", "sim"])
    shown = runner.invoke(app, ["skillbook", "show", "demo", "--json"])

    assert learned.exit_code == 0, learned.output
    assert shown.exit_code == 0, shown.output
    book = json.loads(shown.stdout)
    assert book["active_skills"] == 3
    assert sorted({skill["section"] for skill in book["skillbook"]["skills"].values()}) == [
        "flux",
        "quill",
        "zorb",
    ]
