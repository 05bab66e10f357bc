"""``ace-workers nightly add / run / report`` as a user runs them: real Redis, real in-process workers."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import pytest
import redis
from typer.testing import CliRunner

from ace_workers.cli import app
from ace_workers.core import UpdateBatch, UpdateOperation
from ace_workers.distributed import RedisSkillbookStore
from ace_workers.distributed.ops.nightly import NightlyRunner
from ace_workers.distributed.service import Service, build_service, local_workers
from ace_workers.distributed.settings import WorkerSettings
from ace_workers.distributed.store.keys import SkillbookKeys
from ace_workers.sim import failure_traces

PHASES = re.compile(r"seconds: learn (\d+\.\d), dedup (\d+\.\d), checkpoint (\d+\.\d) \(total (\d+\.\d)\)")


@pytest.fixture
def cli_settings(tmp_path: Path) -> dict[str, str]:
    """``env`` (tests/support/cli_env.py) under a fresh prefix, checkpoints in tmp_path."""
    return {"ACE_SIM_TRUST_THRESHOLD": "0", "ACE_NIGHTLY_DIR": str(tmp_path / "nightly")}


@pytest.fixture
def workers(env: pytest.MonkeyPatch, redis_url: str) -> Callable[[], AbstractContextManager[Service]]:
    """Starts in-process workers configured from the environment the commands read (as set by then)."""

    @contextmanager
    def start() -> Iterator[Service]:
        service = build_service(WorkerSettings.from_env(), redis_url=redis_url)
        try:
            with local_workers(service, learn_threads=2):
                yield service
        finally:
            service.close()

    return start


def invoke(*args: str) -> tuple[int, str]:
    """Run ``ace-workers ARGS``; the exit code and the output with rich's line wrapping undone."""
    result = CliRunner().invoke(app, list(args))
    said = " ".join(result.output.split())
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        said += f" [raised {type(result.exception).__name__}: {result.exception}]"
    return result.exit_code, said


def write_traces(path: Path, n: int) -> Path:
    """``n`` traces as JSONL, with one broken line the command must skip."""
    lines = [json.dumps(trace) for trace in failure_traces(n)]
    path.write_text("\n".join([lines[0], "{not json", *lines[1:]]) + "\n")
    return path


def test_add_run_and_report_a_two_epoch_night(
    env: pytest.MonkeyPatch, workers: Callable[[], AbstractContextManager[Service]], tmp_path: Path
) -> None:
    env.setenv("ACE_NIGHTLY_EPOCHS", "2")
    code, said = invoke("nightly", "report", "book")
    assert code == 0
    assert "no nightly run of 'book' yet" in said
    assert "0 traces wait" in said

    code, said = invoke("nightly", "add", str(write_traces(tmp_path / "t.jsonl", 6)), "--skillbook", "book")
    assert code == 0, said
    assert f"skipped 1 line of {tmp_path / 't.jsonl'}: line 2 (not JSON" in said
    assert "6 traces added to the inbox of 'book'" in said
    assert "6 traces wait in the inbox of 'book'" in invoke("nightly", "report", "book")[1]

    with workers():
        code, ran = invoke("nightly", "run", "book")
    assert code == 0, ran
    store = RedisSkillbookStore(
        redis.Redis.from_url(os.environ["ACE_REDIS_URL"]), "book", prefix=os.environ["ACE_QUEUE_PREFIX"]
    )
    version, book = store.snapshot()
    assert len(book) == 5, ran
    code, reported = invoke("nightly", "report", "book")
    assert code == 0
    for said in (ran, reported):
        # Both epochs ran: every trace twice.
        assert "traces 6 x 2 epochs: 12 done, 0 failed" in said
        assert "skills 0 -> 5: 5 added, 0 merged, 0 removed" in said
        assert f"checkpoint v{version}" in said
        phases = PHASES.search(said)
        assert phases is not None, said
        learn, dedup, checkpoint, total = (float(x) for x in phases.groups())
        assert learn > 0
        assert total == pytest.approx(learn + dedup + checkpoint, abs=0.15)
        assert said.count("written: ") == 2
    stem = f"book-{date_of(ran)}-v{version}"
    assert sorted(p.name for p in (tmp_path / "nightly").iterdir()) == [f"{stem}.json", f"{stem}.md"]
    assert "0 traces wait in the inbox of 'book'" in reported


def date_of(said: str) -> str:
    found = re.search(r"night (\d{4}-\d\d-\d\d)", said)
    assert found is not None, said
    return found.group(1)


def test_a_run_while_another_holds_the_lock_is_refused(
    env: pytest.MonkeyPatch, workers: Callable[[], AbstractContextManager[Service]]
) -> None:
    client = redis.Redis.from_url(os.environ["ACE_REDIS_URL"])
    lock = client.lock(SkillbookKeys("book", os.environ["ACE_QUEUE_PREFIX"]).nightly_lock, timeout=30)
    assert lock.acquire(blocking=False)
    with workers():
        try:
            code, said = invoke("nightly", "run", "book")
        finally:
            lock.release()
        assert code == 1
        assert "a nightly run of skillbook 'book' is in progress" in said
        assert invoke("nightly", "run", "book")[0] == 0


MIRP = [
    "For mirp questions, sum the digits of the input.",
    "When a mirp question comes, sum the digits of the number you are given.",
]


def test_a_night_with_deduplication_merges_two_statements_of_one_rule(
    env: pytest.MonkeyPatch,
    workers: Callable[[], AbstractContextManager[Service]],
    redis_url: str,
    tmp_path: Path,
) -> None:
    env.setenv("HF_HUB_OFFLINE", "1")
    env.setenv("ACE_DEDUP_PROVIDER", "sentence_transformers")
    env.setenv("ACE_DEDUP_INTERVAL", "1000")  # the nightly pass deduplicates, not the learning chain
    store = RedisSkillbookStore(
        redis.Redis.from_url(redis_url), "book", prefix=os.environ["ACE_QUEUE_PREFIX"]
    )
    store.apply(
        UpdateBatch(operations=[UpdateOperation(type="ADD", section="mirp", content=c) for c in MIRP])
    )
    traces = tmp_path / "t.jsonl"
    traces.write_text("".join(json.dumps(t) + "\n" for t in failure_traces(3, topics=3)))
    assert invoke("nightly", "add", str(traces), "--skillbook", "book")[0] == 0
    with workers():
        code, said = invoke("nightly", "run", "book")
    assert code == 0, said
    # The three rules learned, and the two mirp statements merged into one.
    assert "skills 2 -> 4: 3 added, 1 merged, 0 removed" in said
    mirp = [s for s in store.export().skills() if s.section == "mirp"]
    assert [s.content for s in mirp] == [MIRP[0]]
    assert "1 merged" in invoke("nightly", "report", "book")[1]


def test_a_night_whose_samples_fail_exits_1_and_shows_the_errors(
    env: pytest.MonkeyPatch, workers: Callable[[], AbstractContextManager[Service]], tmp_path: Path
) -> None:
    env.setenv("ACE_SIM_FAILURE_RATE", "1")
    env.setenv("ACE_SIM_FAILURE", "error")
    env.setenv("ACE_LLM_MAX_RETRIES", "1")
    env.setenv("ACE_TASK_MAX_RETRIES", "0")  # fail at once rather than after the retries' backoff
    traces = tmp_path / "t.jsonl"
    traces.write_text("".join(json.dumps(t) + "\n" for t in failure_traces(2)))
    assert invoke("nightly", "add", str(traces), "--skillbook", "book")[0] == 0
    with workers():
        code, ran = invoke("nightly", "run", "book")
    assert code == 1, ran
    code, reported = invoke("nightly", "report", "book")
    assert code == 0
    for said in (ran, reported):
        assert "traces 2: 0 done, 2 failed" in said
        assert said.count("ReflectStep: LLMError: simulated provider failure") == 2, said


def test_the_report_of_an_abandoned_night_says_so_and_where_its_samples_went(
    env: pytest.MonkeyPatch, redis_url: str
) -> None:
    env.setenv("ACE_NIGHTLY_MAX_STALLS", "1")
    service = build_service(WorkerSettings.from_env(), redis_url=redis_url)
    try:
        service.producer.append_to_inbox(failure_traces(2), "book")
        # No worker runs: the batch stalls, and with one stall allowed the run abandons it.
        report = NightlyRunner(service.producer, stall_after=0.5).run("book", scheduled=False)
    finally:
        service.close()
    assert report is not None
    code, reported = invoke("nightly", "report", "book")
    assert code == 0
    assert "traces 2: 0 done, 2 failed" in reported
    assert (
        f"batch {report.batch_id} abandoned: no progress for 0.5 s (stalled runs in a row: 1); its "
        "unfinished samples are dead letters (ace-workers dead-letters retry sends them again)"
    ) in reported
    code, listed = invoke("dead-letters", "list")
    assert code == 0, listed
    assert listed.count("Abandoned: no progress") == 2, listed
