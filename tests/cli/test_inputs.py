"""JSONL inputs of ``enqueue`` and ``learn``: checked and counted first, then streamed, in constant memory."""

from __future__ import annotations

import json
import time
import tracemalloc
from pathlib import Path

import pytest
import redis
from typer.testing import CliRunner

from ace_workers import cli
from ace_workers.cli import app
from ace_workers.distributed.producer.producer import BatchHandle
from ace_workers.distributed.service import build_service, local_workers
from ace_workers.distributed.settings import WorkerSettings
from tests.support.cli import keys_of, said, write_traces


def test_enqueue_refuses_a_file_over_the_batch_limit_before_sending_anything(
    clean_env: pytest.MonkeyPatch, redis_client: redis.Redis, redis_url: str
) -> None:
    traces = write_traces(Path("traces.jsonl"), 5)
    clean_env.setenv("ACE_REDIS_URL", redis_url)
    clean_env.setenv("ACE_QUEUE_PREFIX", "clilimit")
    clean_env.setenv("ACE_MAX_BATCH_SIZE", "4")
    result = CliRunner().invoke(app, ["enqueue", str(traces), "--skillbook", "x"])
    assert result.exit_code != 0
    assert f"{traces} holds 5 inputs, above ACE_MAX_BATCH_SIZE=4; nothing was sent" in said(result.output)
    assert keys_of(redis_client, "clilimit") == []


def test_enqueue_names_the_file_and_line_of_a_trace_too_large_and_sends_nothing(
    clean_env: pytest.MonkeyPatch, redis_client: redis.Redis, redis_url: str
) -> None:
    traces = write_traces(Path("traces.jsonl"), 4)
    lines = traces.read_text().splitlines()
    lines[2] = json.dumps({"question": "q", "answer": "x" * 500})
    traces.write_text("\n".join(lines) + "\n")
    clean_env.setenv("ACE_REDIS_URL", redis_url)
    clean_env.setenv("ACE_QUEUE_PREFIX", "clibig")
    clean_env.setenv("ACE_MAX_TRACE_BYTES", "300")
    result = CliRunner().invoke(app, ["enqueue", str(traces), "--skillbook", "x"])
    assert result.exit_code != 0
    message = said(result.output)
    assert f"{traces}:3: trace is" in message
    assert "above the limit of 300 bytes" in message
    assert keys_of(redis_client, "clibig") == []


def test_learn_names_the_file_and_line_of_a_record_that_is_not_a_sample(
    clean_env: pytest.MonkeyPatch,
) -> None:
    samples = Path("samples.jsonl")
    samples.write_text('{"question": "q1"}\n\n{not json\n{"question": "q2", "colour": "red"}\n')
    result = CliRunner().invoke(app, ["learn", str(samples), "--recipe", "ace"])
    assert result.exit_code != 0
    assert f"skipped 1 line of {samples}: line 3 (not JSON" in said(result.output)
    assert f"{samples}:4: not a sample" in said(result.output)


def test_enqueue_streams_a_file_to_running_workers_as_one_batch_of_its_count(
    clean_env: pytest.MonkeyPatch, redis_client: redis.Redis, redis_url: str
) -> None:
    traces = write_traces(Path("traces.jsonl"), 6, bad_line_at=3)
    with traces.open("a") as more:
        more.write("\n\n")  # blank lines count for nothing
    clean_env.setenv("ACE_REDIS_URL", redis_url)
    clean_env.setenv("ACE_QUEUE_PREFIX", "clistream")
    service = build_service(WorkerSettings.from_env(), redis_url=redis_url)
    try:
        with local_workers(service, learn_threads=2):
            result = CliRunner().invoke(app, ["enqueue", str(traces), "--skillbook", "streamed"])
            assert result.exit_code == 0, result.output
            assert f"skipped 1 line of {traces}: line 3 (not JSON" in said(result.output)
            handle = BatchHandle(result.output.strip().splitlines()[-1], service.runtime)
            status = handle.wait(timeout=60)
    finally:
        service.close()
    assert (status.total, status.done, status.failed) == (6, 6, 0)


def test_checking_and_streaming_a_file_costs_memory_of_one_line_not_of_the_file(tmp_path: Path) -> None:
    path = tmp_path / "many.jsonl"
    lines = 4_000
    with path.open("w") as out:
        for number in range(lines):
            out.write(json.dumps({"question": f"q{number}", "answer": "a" * 1_000}) + "\n")
    size = path.stat().st_size  # about 4 MB
    settings = WorkerSettings()
    tracemalloc.start()
    try:
        started = time.monotonic()
        count = cli.scan_inputs(path, "trace_analyser", settings)
        streamed = sum(1 for _ in cli.stream_inputs(path, "trace_analyser"))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert count == streamed == lines
    assert peak < size / 20, (peak, size, time.monotonic() - started)


def test_learn_over_several_epochs_sends_every_input_each_epoch(clean_env: pytest.MonkeyPatch) -> None:
    traces = write_traces(Path("traces.jsonl"), 3)
    result = CliRunner().invoke(app, ["learn", str(traces), "--epochs", "2", "--skillbook", "twice"])
    assert result.exit_code == 0, result.output
    message = said(result.output)
    assert "from 3 inputs x 2 epochs" in message
    assert "6 done, 0 failed" in message
