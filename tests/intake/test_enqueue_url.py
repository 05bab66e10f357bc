"""``ace-workers enqueue --url``: a producer with intake's URL and an API key, and no Redis URL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from ace_workers.distributed.service import Service
from tests.support.cli import run_console_script, write_traces
from tests.support.intake import (
    ALPHA_BOOK,
    BETA_BOOK,
    IntakeKeys,
    intake_without_workers,
)


@pytest.fixture
def intake(redis_client: redis.Redis, redis_url: str) -> Iterator[tuple[Service, IntakeKeys, str]]:
    """A fleet without workers, its tenants' keys, and its intake's URL."""
    with intake_without_workers(redis_url) as running:
        yield running


def test_enqueue_url_sends_a_file_with_only_a_key_and_prints_the_batch_id(
    clean_env: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    intake: tuple[Service, IntakeKeys, str],
) -> None:
    service, keys, url = intake
    clean_env.setenv("ACE_API_KEY", keys.alpha_learn)  # and no ACE_REDIS_URL
    write_traces(Path("traces.jsonl"), 3)
    ran = run_console_script(
        clean_env, capsys, "enqueue", "traces.jsonl", "--url", url, "--skillbook", ALPHA_BOOK
    )
    assert ran.code == 0, ran.err
    status = service.runtime.batches.status(ran.out.strip())
    assert (status.skillbook, status.total) == (ALPHA_BOOK, 3)


def test_enqueue_url_with_another_tenants_skillbook_exits_4_with_intakes_one_line(
    clean_env: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    intake: tuple[Service, IntakeKeys, str],
) -> None:
    service, keys, url = intake
    write_traces(Path("traces.jsonl"), 3)
    args = ("enqueue", "traces.jsonl", "--url", url, "--skillbook", BETA_BOOK, "--api-key", keys.alpha_learn)
    ran = run_console_script(clean_env, capsys, *args)
    assert ran.code == 4
    assert ran.err == f"error: intake at {url}: HTTP 404 not_found: no such skillbook for this key\n"
    assert service.runtime.batches.recent(10) == []


def test_enqueue_url_with_a_read_key_exits_4(
    clean_env: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    intake: tuple[Service, IntakeKeys, str],
) -> None:
    _, keys, url = intake
    write_traces(Path("traces.jsonl"), 3)
    args = ("enqueue", "traces.jsonl", "--url", url, "--skillbook", ALPHA_BOOK, "--api-key", keys.alpha_read)
    ran = run_console_script(clean_env, capsys, *args)
    assert ran.code == 4
    assert ran.err.startswith(f"error: intake at {url}: HTTP 403 forbidden: ")


def test_enqueue_url_without_a_key_is_a_usage_error(
    clean_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write_traces(Path("traces.jsonl"), 3)
    ran = run_console_script(clean_env, capsys, "enqueue", "traces.jsonl", "--url", "http://127.0.0.1:9")
    assert ran.code == 2
    assert "needs an API key of role learn or above: --api-key or ACE_API_KEY" in ran.err
