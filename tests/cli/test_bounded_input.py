"""Bounded input at the CLI, each as a process of its own: what is too long, too deep or not a file."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import redis

from ace_workers.core import Skillbook
from ace_workers.core.skill_limits import MAX_CONTENT_CHARS
from ace_workers.distributed.service import build_service
from ace_workers.distributed.settings import WorkerSettings
from ace_workers.distributed.store.keys import SkillbookKeys, batch_key
from ace_workers.distributed.store.planning import encode_stored_skill
from ace_workers.distributed.tenancy import TenantRegistry
from ace_workers.distributed.tenancy.tenants import MAX_MODEL_CHARS
from ace_workers.sim import failure_traces
from tests.support.cli import Ran, env_with_one_skillbook, run_cli_process, said

PREFIX = "clibounded"
KEYS = SkillbookKeys("book", PREFIX)


@pytest.fixture
def env(clean_env: pytest.MonkeyPatch, redis_url: str, redis_client: redis.Redis) -> pytest.MonkeyPatch:
    return env_with_one_skillbook(clean_env, redis_url, redis_client, PREFIX)


def one_line_usage_error(ran: Ran) -> str:
    """The one error line of a refused command (exit 2); fails if it printed a traceback."""
    assert ran.code == 2, ran
    assert "Traceback" not in ran.err, ran.err
    return said(ran.err)


def test_show_of_a_200000_character_skill_in_the_store_is_shown_whole_in_seconds(
    env: pytest.MonkeyPatch, redis_client: redis.Redis
) -> None:
    # Written before the limits existed (straight into the skills hash): still shown, whole.
    # Digits: rich's highlighter took time quadratic in such a run (20,000 took 20 s).
    long = "1" * 200_000
    (image,) = json.loads(Skillbook.dumps(_book_with("Check units.")))["skills"].values()
    redis_client.hset(KEYS.skills, "general-00001", encode_stored_skill({**image, "content": long}, 1))

    ran = run_cli_process("skillbook", "show", "book", timeout=20)  # 20 s: a process start is ~1 s

    assert ran.code == 0, ran.err
    assert long in ran.out


def test_import_of_a_file_nested_200000_deep_is_one_line_naming_the_file(
    env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 200_000 + "]" * 200_000)

    error = one_line_usage_error(run_cli_process("skillbook", "import", str(deep), "other"))

    assert f"{deep}: JSON nested deeper than 200 levels (at character 200); refused" in error


def test_import_of_a_fifo_is_refused_at_once_without_blocking(
    env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fifo = tmp_path / "book.fifo"
    os.mkfifo(fifo)

    error = one_line_usage_error(run_cli_process("skillbook", "import", str(fifo), "other", timeout=30))

    assert f"{fifo}: a FIFO, not a regular file; refused" in error


def test_import_of_a_skill_over_the_content_limit_is_refused_naming_it_and_nothing_is_written(
    env: pytest.MonkeyPatch, redis_client: redis.Redis, tmp_path: Path
) -> None:
    path = tmp_path / "long.json"
    path.write_text(Skillbook.dumps(_book_with("Check units.")).replace("Check units.", "x" * 200_000))

    error = one_line_usage_error(run_cli_process("skillbook", "import", str(path), "other"))

    assert (
        f"skill 'general-00001': its content has 200000 characters, over the {MAX_CONTENT_CHARS} "
        "a skill's content may have"
    ) in error
    assert not redis_client.exists(SkillbookKeys("other", PREFIX).version)


def test_status_of_a_batch_with_a_corrupt_counter_is_one_line_naming_its_key_and_field(
    env: pytest.MonkeyPatch, redis_client: redis.Redis, redis_url: str
) -> None:
    service = build_service(WorkerSettings.from_env(), redis_url=redis_url)
    try:  # no workers: the batch waits, as one whose record was then garbled
        batch_id = service.producer.enqueue_traces(failure_traces(2), "book").batch_id
    finally:
        service.close()
    redis_client.hset(batch_key(PREFIX, batch_id), "total", "lots")

    ran = run_cli_process("status", batch_id)

    assert ran.code == 1, ran
    assert ran.err.count("\n") == 1, ran.err
    assert f"key '{batch_key(PREFIX, batch_id)}' field 'total' holds 'lots', not a number" in ran.err


@pytest.mark.parametrize(
    ("budget", "problem"),
    [
        ("*:tokens_per_day=" + "9" * 400, "must be a whole number from 0 to 1e+15"),
        ("*:cost_per_day=" + "9" * 400, "must be a number of USD from 0 to 1e+09"),
        ("m" * 10_000 + ":tokens_per_day=5", f"a model name of at most {MAX_MODEL_CHARS} characters"),
    ],
    ids=["400-nines-of-tokens", "400-nines-of-usd", "10000-character-model"],
)
def test_a_budget_beyond_its_maximum_is_refused_in_one_line_and_nothing_is_stored(
    env: pytest.MonkeyPatch, redis_client: redis.Redis, budget: str, problem: str
) -> None:
    error = one_line_usage_error(run_cli_process("tenant", "add", "acme", "--budget", budget))

    assert problem in error
    assert "acme" not in TenantRegistry(redis_client, prefix=PREFIX).all()


def _book_with(content: str) -> Skillbook:
    book = Skillbook()
    book.add_skill("general", content)
    return book
