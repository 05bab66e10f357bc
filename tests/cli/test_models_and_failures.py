"""A model that cannot be called is refused in one line before any work; a batch's failures are
shown as the first five and how many more, and a batch that failed whole says so."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import redis

from ace_workers.distributed.service import build_service, local_workers
from ace_workers.distributed.settings import WorkerSettings
from ace_workers.providers._lazy_imports import import_litellm
from tests.support.cli import Ran, run_console_script, said, write_traces
from tests.support.recipes import TEST_RECIPES

Run = Callable[..., Ran]


@pytest.fixture
def run(clean_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Run:
    """``ace-workers ARGS`` as the console script runs it, litellm already imported.

    Importing litellm takes seconds (more on a loaded machine), paid by any process that
    calls a model; what is timed below is the command's own work before it refuses.
    """
    clean_env.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import_litellm()
    return lambda *args: run_console_script(clean_env, capsys, *args)


@pytest.mark.parametrize(
    ("model", "line"),
    [
        ("nope", "error: model 'nope' is not a model litellm knows (name its provider"),
        ("gpt-4o-mini", "error: model 'gpt-4o-mini' needs OPENAI_API_KEY"),
    ],
)
def test_learn_refuses_a_model_it_cannot_call_in_one_line_before_any_work(
    run: Run, clean_env: pytest.MonkeyPatch, model: str, line: str
) -> None:
    clean_env.delenv("OPENAI_API_KEY", raising=False)
    traces = write_traces(Path("traces.jsonl"), 3)
    started = time.monotonic()

    ran = run("learn", str(traces), "--skillbook", "k", "--model", model)

    assert time.monotonic() - started < 5
    assert ran.code == 2
    assert len(ran.err.splitlines()) == 1
    assert ran.err.startswith(line)
    assert ran.out == ""  # nothing started: no "learning k from 3 inputs"


def test_a_worker_refuses_a_model_it_cannot_call_before_it_connects(
    run: Run, clean_env: pytest.MonkeyPatch
) -> None:
    clean_env.setenv("ACE_REDIS_URL", "redis://127.0.0.1:1/0")  # never reached
    clean_env.setenv("ACE_REFLECTOR_MODEL", "nope")

    ran = run("worker", "--queues", "learn")

    assert ran.code == 2
    assert len(ran.err.splitlines()) == 1
    assert ran.err.startswith("error: model 'nope' is not a model litellm knows")


def test_a_writer_without_deduplication_calls_no_model_and_is_not_refused_for_one() -> None:
    from ace_workers.distributed.llms import check_models

    check_models(WorkerSettings(skill_manager_model="nope"), ["write"])  # raises nothing


def test_learn_where_every_sample_failed_says_so_and_shows_five_errors_and_how_many_more(
    run: Run, clean_env: pytest.MonkeyPatch
) -> None:
    for name, value in {"SIM_FAILURE_RATE": "1", "SIM_FAILURE": "error", "TASK_MAX_RETRIES": "0"}.items():
        clean_env.setenv(f"ACE_{name}", value)
    traces = write_traces(Path("traces.jsonl"), 12)

    ran = run("learn", str(traces), "--skillbook", "k", "--model", "sim")

    assert ran.code == 1
    output = said(ran.out)
    assert output.count("ReflectStep: LLMError: simulated provider failure") == 6  # 5 listed, and the first
    batch = re.search(r"and 7 more \(ace-workers dead-letters list --batch (\w+)\)", output)
    assert batch is not None
    assert output.endswith(
        "all 12 samples failed; first error: ReflectStep: LLMError: simulated provider failure for "
        "ReflectorOutput "
        "(failure_rate)"
    )
    assert "no skillbook named" not in ran.out + ran.err


def test_status_shows_the_first_five_errors_and_how_many_more(
    clean_env: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    redis_client: redis.Redis,
    redis_url: str,
) -> None:
    clean_env.setenv("ACE_REDIS_URL", redis_url)
    clean_env.setenv("ACE_QUEUE_PREFIX", "clifive")
    clean_env.setenv("ACE_RECIPES", TEST_RECIPES)
    service = build_service(WorkerSettings.from_env(), redis_url=redis_url)
    try:
        with local_workers(service, learn_threads=2):
            handle = service.producer.enqueue_traces(
                [{"question": f"q{i}"} for i in range(8)], "five", recipe="failing"
            )
            handle.wait(timeout=60)
    finally:
        service.close()

    ran = run_console_script(clean_env, capsys, "status", handle.batch_id)

    output = said(ran.out)
    assert output.count("Explode: RuntimeError: boom") == 6  # 5 listed, and the first
    assert f"and 3 more (ace-workers dead-letters list --batch {handle.batch_id})" in output
    assert "all 8 samples failed; first error: Explode: RuntimeError: boom" in output
