"""``ace-workers console``: refuses to start without credentials, serves behind them when it has them."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import redis

from tests.support.cli import run_console_script
from tests.support.console import console_process

BIN = Path(sys.executable).parent


def test_without_credentials_the_console_refuses_to_start(
    clean_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], redis_url: str
) -> None:
    clean_env.setenv("ACE_REDIS_URL", redis_url)
    ran = run_console_script(clean_env, capsys, "console")
    assert ran.code == 2
    assert "ACE_CONSOLE_BASIC_AUTH" in ran.err


def test_no_auth_off_loopback_is_refused(
    clean_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], redis_url: str
) -> None:
    clean_env.setenv("ACE_REDIS_URL", redis_url)
    ran = run_console_script(clean_env, capsys, "console", "--no-auth", "--host", "0.0.0.0")
    assert ran.code == 2
    assert "loopback" in ran.err


def test_the_console_needs_a_shared_redis(
    clean_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    ran = run_console_script(clean_env, capsys, "console", "--no-auth")
    assert ran.code == 2
    assert "ACE_REDIS_URL" in ran.err


def test_a_malformed_credentials_setting_is_refused_without_echoing_it(
    clean_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], redis_url: str
) -> None:
    clean_env.setenv("ACE_REDIS_URL", redis_url)
    clean_env.setenv("ACE_CONSOLE_BASIC_AUTH", "ops-secret-without-colon")
    ran = run_console_script(clean_env, capsys, "console")
    assert ran.code == 2
    assert "ACE_CONSOLE_BASIC_AUTH" in ran.err
    assert "ops-secret-without-colon" not in ran.err + ran.out


@pytest.fixture
def started_console(redis_client: redis.Redis, redis_url: str, tmp_path: Path) -> Iterator[str]:
    """``ace-workers console`` as an operator starts it, with basic auth from the environment."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACE_")}
    env |= {"ACE_REDIS_URL": redis_url, "ACE_CONSOLE_BASIC_AUTH": "ops:cli-console-password"}
    with console_process([str(BIN / "ace-workers"), "console"], env, tmp_path / "console.log") as url:
        yield url


@pytest.mark.slow
def test_the_started_console_answers_behind_basic_auth(
    started_console: str, redis_client: redis.Redis
) -> None:
    assert httpx.get(f"{started_console}/api/skillbooks", timeout=10).status_code == 401
    answer = httpx.get(f"{started_console}/api/skillbooks", auth=("ops", "cli-console-password"), timeout=10)
    assert answer.status_code == 200
    assert answer.json() == {"skillbooks": []}
