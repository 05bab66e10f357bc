"""``ace-workers console``: refuses retired credentials and --no-auth off loopback; serves behind API keys."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import redis

from ace_workers.distributed.tenancy import ApiKeys
from tests.support.cli import run_console_script
from tests.support.console import console_process

BIN = Path(sys.executable).parent


@pytest.mark.parametrize("variable", ["ACE_CONSOLE_BASIC_AUTH", "ACE_CONSOLE_TOKENS"])
def test_a_retired_credentials_setting_is_refused_naming_api_keys_without_echoing_it(
    variable: str, clean_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], redis_url: str
) -> None:
    clean_env.setenv("ACE_REDIS_URL", redis_url)
    clean_env.setenv(variable, "ops:old-console-secret")
    ran = run_console_script(clean_env, capsys, "console")
    assert ran.code == 2
    assert f"{variable} is retired" in ran.err
    assert "ace-workers key create '*' --role admin" in ran.err
    assert len(ran.err.strip().splitlines()) == 1
    assert "old-console-secret" not in ran.err + ran.out


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


@pytest.fixture
def started_console(redis_client: redis.Redis, redis_url: str, tmp_path: Path) -> Iterator[str]:
    """``ace-workers console`` as an operator starts it: on the fleet's Redis, nothing else set."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACE_")}
    env |= {"ACE_REDIS_URL": redis_url}
    with console_process([str(BIN / "ace-workers"), "console"], env, tmp_path / "console.log") as url:
        yield url


@pytest.mark.slow
def test_the_started_console_answers_behind_api_keys(started_console: str, redis_client: redis.Redis) -> None:
    _, secret = ApiKeys(redis_client).create("*", "admin", note="ops")  # the default prefix, as the console's
    assert httpx.get(f"{started_console}/api/skillbooks", timeout=10).status_code == 401
    signed_in = httpx.get(f"{started_console}/api/skillbooks", auth=("ops", secret), timeout=10)
    assert signed_in.status_code == 200
    assert signed_in.json() == {"skillbooks": []}
    bearer = {"Authorization": f"Bearer {secret}"}
    assert httpx.get(f"{started_console}/api/skillbooks", headers=bearer, timeout=10).status_code == 200
