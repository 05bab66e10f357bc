"""dead-letters list and retry pick letters by batch, skillbook and time parked; retry sends only those."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import redis
import typer
from typer.testing import CliRunner

from ace_workers.cli import app
from ace_workers.cli.dead_letters import parse_since
from ace_workers.distributed.service import build_service, local_workers
from ace_workers.distributed.settings import WorkerSettings
from ace_workers.distributed.store.keys import dead_letters_key
from tests.support.crafted import park_letter
from tests.support.recipes import TEST_RECIPES
from tests.support.schema0 import stamp_current_schema

PREFIX = "clifilters"


@pytest.fixture
def two_failed_batches(
    clean_env: pytest.MonkeyPatch, redis_client: redis.Redis, redis_url: str
) -> tuple[str, str]:
    """Two batches of two samples that failed (skillbooks alpha and beta), and one letter of old."""
    clean_env.setenv("ACE_REDIS_URL", redis_url)
    clean_env.setenv("ACE_QUEUE_PREFIX", PREFIX)
    stamp_current_schema(redis_client, PREFIX)  # as this version's first process did
    clean_env.setenv("ACE_RECIPES", TEST_RECIPES)
    # Parked before letters had a time: no parked_at.
    park_letter(redis_client, PREFIX, recipe="trace_analyser", batch_id="old")
    service = build_service(WorkerSettings.from_env(), redis_url=redis_url)
    traces = [{"question": "q0"}, {"question": "q1"}]
    try:
        with local_workers(service, learn_threads=2):
            alpha = service.producer.enqueue_traces(traces, "alpha", recipe="failing")
            beta = service.producer.enqueue_traces(traces, "beta", recipe="failing")
            alpha.wait(timeout=60)
            beta.wait(timeout=60)
    finally:
        service.close()
    return alpha.batch_id, beta.batch_id


def listed(*options: str) -> list[dict[str, Any]]:
    """What ``dead-letters list --json OPTIONS`` prints, parsed."""
    result = CliRunner().invoke(app, ["dead-letters", "list", "--json", *options])
    assert result.exit_code == 0, result.output
    letters: list[dict[str, Any]] = json.loads(result.stdout)
    return letters


def test_list_picks_letters_by_batch_skillbook_and_time(two_failed_batches: tuple[str, str]) -> None:
    alpha, beta = two_failed_batches

    assert [letter["batch_id"] for letter in listed("--batch", alpha)] == [alpha, alpha]
    assert [letter["batch_id"] for letter in listed("--skillbook", "beta")] == [beta, beta]
    assert [letter["batch_id"] for letter in listed("--batch", alpha, "--skillbook", "beta")] == []
    # The letter of old has no time: it is listed unfiltered, never by --since.
    assert len(listed()) == 5
    assert sorted(letter["batch_id"] for letter in listed("--since", "1h")) == sorted(
        [alpha, alpha, beta, beta]
    )
    tomorrow = (datetime.now(UTC) + timedelta(days=1)).isoformat()
    assert listed("--since", tomorrow) == []


def test_a_letter_parked_now_carries_the_time(two_failed_batches: tuple[str, str]) -> None:
    alpha, _ = two_failed_batches
    parked = [datetime.fromisoformat(letter["parked_at"]) for letter in listed("--batch", alpha)]
    assert all(datetime.now(UTC) - when < timedelta(minutes=5) for when in parked)


def test_retry_with_a_filter_sends_and_removes_only_the_letters_it_picks(
    two_failed_batches: tuple[str, str], redis_client: redis.Redis
) -> None:
    alpha, beta = two_failed_batches

    retried = CliRunner().invoke(app, ["dead-letters", "retry", "--batch", alpha, "--json"])

    assert retried.exit_code == 0, retried.output
    assert json.loads(retried.stdout) == {"sent": 2, "kept": []}
    assert sorted(letter["batch_id"] for letter in listed()) == sorted(["old", beta, beta])
    assert redis_client.llen(f"{PREFIX}.learn") == 2  # alpha's two samples, on their way again
    assert redis_client.llen(dead_letters_key(PREFIX)) == 3


def test_since_reads_a_duration_back_from_now_or_an_iso_time() -> None:
    now = datetime(2025, 5, 1, 12, 0, tzinfo=UTC)
    assert parse_since("2h", now) == datetime(2025, 5, 1, 10, 0, tzinfo=UTC)
    assert parse_since("30m", now) == datetime(2025, 5, 1, 11, 30, tzinfo=UTC)
    assert parse_since("1d", now) == datetime(2025, 4, 30, 12, 0, tzinfo=UTC)
    assert parse_since("2025-04-01T08:00+00:00", now) == datetime(2025, 4, 1, 8, 0, tzinfo=UTC)


def test_since_that_is_neither_a_duration_nor_a_time_is_a_usage_error_naming_it() -> None:
    with pytest.raises(typer.BadParameter, match="'yesterday' is neither a duration"):
        parse_since("yesterday")
    result = CliRunner().invoke(app, ["dead-letters", "list", "--since", "yesterday"])
    assert result.exit_code == 2
