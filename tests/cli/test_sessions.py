"""``enqueue --format claude-code|openclaw``: folders of sessions, one trace each, learned by workers."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import redis
from typer.testing import CliRunner

from ace_workers.cli import app
from ace_workers.distributed.producer.producer import BatchHandle
from ace_workers.distributed.service import build_service, local_workers
from ace_workers.distributed.settings import WorkerSettings
from tests.support.claude_code import claude_session
from tests.support.cli import keys_of, said

ROOT = Path(__file__).resolve().parents[1] / "integrations"
OPENCLAW = ROOT / "openclaw" / "sessions"
TRANSCRIPT = ROOT / "claude_code" / "transcripts" / "fix-tests.jsonl"


def enqueue_and_wait(redis_url: str, args: list[str]) -> tuple[str, BatchHandle, list[str]]:
    """Run ``enqueue`` with in-process workers; the output, the batch handle, the skillbook's sections."""
    service = build_service(WorkerSettings.from_env(), redis_url=redis_url)
    try:
        with local_workers(service, learn_threads=2):
            result = CliRunner().invoke(app, ["enqueue", *args, "--skillbook", "sessions"])
            assert result.exit_code == 0, result.output
            handle = BatchHandle(result.output.strip().splitlines()[-1], service.runtime)
            handle.wait(timeout=60)
            sections = sorted(s.section for s in service.runtime.store("sessions").export().skills())
    finally:
        service.close()
    return result.output, handle, sections


def test_openclaw_sessions_of_a_folder_are_converted_here_and_learned(
    clean_env: pytest.MonkeyPatch, redis_client: redis.Redis, redis_url: str
) -> None:
    sessions = Path("sessions")
    shutil.copytree(OPENCLAW, sessions / "agent-main")
    clean_env.setenv("ACE_REDIS_URL", redis_url)
    clean_env.setenv("ACE_QUEUE_PREFIX", "cliopenclaw")
    output, handle, sections = enqueue_and_wait(redis_url, [str(sessions), "--format", "openclaw"])
    status = handle.status()
    assert (status.total, status.done, status.failed) == (2, 2, 0)
    assert sections == ["flux", "zorb"]
    assert f"skipped 1 line of {sessions / 'agent-main' / 'flux.jsonl'}: line 4 (not JSON" in said(output)
    assert "empty.jsonl: the session holds no user or assistant message" in said(output)


def test_claude_code_sessions_are_sent_raw_and_converted_on_the_workers_with_their_recipe(
    clean_env: pytest.MonkeyPatch, redis_client: redis.Redis, redis_url: str
) -> None:
    projects = Path("projects")
    claude_session(projects / "-home-dev-puzzles" / "a1.jsonl", "Solve the zorb puzzle. Input: 1234")
    (projects / "-home-dev-dates").mkdir()
    shutil.copy(TRANSCRIPT, projects / "-home-dev-dates" / "fix-tests.jsonl")
    clean_env.setenv("ACE_REDIS_URL", redis_url)
    clean_env.setenv("ACE_QUEUE_PREFIX", "cliclaude")
    args = [str(projects), "--format", "claude-code", "--recipe", "claude_code_traces"]
    output, handle, sections = enqueue_and_wait(redis_url, args)
    status = handle.status()
    assert (status.total, status.done, status.failed, status.recipe) == (2, 2, 0, "claude_code_traces")
    assert sections == ["zorb"]
    transcript = projects / "-home-dev-dates" / "fix-tests.jsonl"
    assert f"skipped 1 line of {transcript}: line 4 (not JSON" in said(output)


def test_a_huge_tool_output_is_cut_by_the_producer_so_the_session_fits_the_trace_limit(
    clean_env: pytest.MonkeyPatch, redis_client: redis.Redis, redis_url: str
) -> None:
    session = claude_session(
        Path("big.jsonl"), "Solve the zorb puzzle. Input: 1234", tool_output="x" * 300_000
    )
    clean_env.setenv("ACE_REDIS_URL", redis_url)
    clean_env.setenv("ACE_QUEUE_PREFIX", "clihuge")
    clean_env.setenv("ACE_MAX_TRACE_BYTES", "100000")
    _, handle, sections = enqueue_and_wait(redis_url, [str(session), "--format", "claude-code"])
    assert (handle.status().done, sections) == (1, ["zorb"])


def test_a_raw_session_above_the_trace_limit_is_refused_naming_the_file(
    clean_env: pytest.MonkeyPatch, redis_client: redis.Redis, redis_url: str
) -> None:
    session = claude_session(Path("big.jsonl"), "task", tool_output="x" * 300_000)
    clean_env.setenv("ACE_REDIS_URL", redis_url)
    clean_env.setenv("ACE_QUEUE_PREFIX", "clirawbig")
    clean_env.setenv("ACE_MAX_TRACE_BYTES", "100000")
    args = ["enqueue", str(session), "--format", "claude-code", "--recipe", "claude_code_traces"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code != 0
    assert f"{session}: trace is" in said(result.output)
    assert "above the limit of 100,000 bytes" in said(result.output)
    assert keys_of(redis_client, "clirawbig") == []


def test_a_recipe_for_other_sessions_is_refused_before_anything_is_read(
    clean_env: pytest.MonkeyPatch, redis_url: str
) -> None:
    clean_env.setenv("ACE_REDIS_URL", redis_url)
    args = ["enqueue", "missing", "--format", "openclaw", "--recipe", "claude_code_traces"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code != 0
    assert (
        "--recipe claude_code_traces converts other sessions: with --format openclaw use openclaw_traces"
        in said(result.output)
    )


def test_an_unknown_format_is_refused(clean_env: pytest.MonkeyPatch, redis_url: str) -> None:
    clean_env.setenv("ACE_REDIS_URL", redis_url)
    result = CliRunner().invoke(app, ["enqueue", "x.jsonl", "--format", "cursor"])
    assert result.exit_code != 0
    assert "unknown format 'cursor': use jsonl, claude-code, openclaw" in said(result.output)


def saved_browser_runs(folder: Path) -> Path:
    """Two browser-use runs saved as the library saves them, an empty one, and a file that is not one."""
    from tests.support.browser_agents import failed_zorb_run

    folder.mkdir()
    failed_zorb_run().save_to_file(folder / "zorb-1.json")
    failed_zorb_run(task="Solve the zorb puzzle. Input: 5678").save_to_file(folder / "zorb-2.json")
    (folder / "empty.json").write_text(json.dumps({"history": []}))
    (folder / "notes.json").write_text(json.dumps({"title": "not a run"}))
    return folder


@pytest.mark.parametrize("recipe", ["trace_analyser", "browser_use_traces"])
def test_saved_browser_use_runs_are_one_trace_each_converted_here_or_on_the_workers(
    recipe: str, clean_env: pytest.MonkeyPatch, redis_client: redis.Redis, redis_url: str
) -> None:
    runs = saved_browser_runs(Path("runs"))
    clean_env.setenv("ACE_REDIS_URL", redis_url)
    clean_env.setenv("ACE_QUEUE_PREFIX", f"clibrowser{recipe[:5]}")
    args = [str(runs), "--format", "browser-use", "--recipe", recipe]
    output, handle, sections = enqueue_and_wait(redis_url, args)
    status = handle.status()
    assert (status.total, status.done, status.failed, status.recipe) == (2, 2, 0, recipe)
    assert sections == ["zorb"]
    questions = sorted(result.output.trace["question"] for result in handle.results() if result.output)
    assert questions == ["Solve the zorb puzzle. Input: 1234", "Solve the zorb puzzle. Input: 5678"]
    assert "notes.json: skipped, not a saved browser-use history" in said(output)
    assert "empty.json" in said(output)


def test_a_saved_browser_run_with_a_huge_extract_travels_by_claim_check_and_is_cut_on_the_worker(
    clean_env: pytest.MonkeyPatch, redis_client: redis.Redis, redis_url: str
) -> None:
    from tests.support.browser_agents import failed_zorb_run

    run = Path("huge.json")
    failed_zorb_run(extracted="row " * 100_000).save_to_file(run)  # 400 kB, above ACE_CLAIM_CHECK_BYTES
    clean_env.setenv("ACE_REDIS_URL", redis_url)
    clean_env.setenv("ACE_QUEUE_PREFIX", "clibrowserhuge")
    args = [str(run), "--format", "browser-use", "--recipe", "browser_use_traces"]
    _, handle, sections = enqueue_and_wait(redis_url, args)
    assert (handle.status().done, sections) == (1, ["zorb"])
    assert keys_of(redis_client, "clibrowserhuge:claim:")  # the raw run went by reference
    (result,) = handle.results()
    assert result.output is not None
    assert "characters cut from this output" in result.output.trace["reasoning"]
