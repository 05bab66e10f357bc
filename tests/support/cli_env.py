"""The CLI tests' environment: one ``env`` fixture (a pytest plugin, loaded by the top conftest).

A test that runs ``ace-workers`` commands asks for ``env``: no ACE_* settings from the
surrounding shell, the test Redis under a queue prefix, the schema stamped there as this
version's first process would have. A module that needs more says so by overriding
``cli_settings``, e.g. to name its prefix (its tests build stores under it)::

    @pytest.fixture
    def cli_settings() -> dict[str, str]:
        return {"ACE_QUEUE_PREFIX": PREFIX, "ACE_SIM_TRUST_THRESHOLD": "0"}

and ``cli_stamped`` (False) to start from a Redis no process has written to.
"""

from __future__ import annotations

import uuid

import pytest
import redis

from .schema0 import stamp_current_schema


@pytest.fixture
def cli_settings() -> dict[str, str]:
    """ACE_* settings a module adds to ``env`` (none here; a module overrides this fixture)."""
    return {}


@pytest.fixture
def cli_stamped() -> bool:
    """Whether ``env`` stamps the schema first (a module that checks what a command writes says False)."""
    return True


@pytest.fixture
def env(
    clean_env: pytest.MonkeyPatch,
    redis_url: str,
    redis_client: redis.Redis,
    cli_settings: dict[str, str],
    cli_stamped: bool,
) -> pytest.MonkeyPatch:
    """The CLI on the test Redis under ``cli_settings``' ACE_QUEUE_PREFIX (else a fresh one)."""
    prefix = cli_settings.get("ACE_QUEUE_PREFIX") or f"t{uuid.uuid4().hex[:8]}"
    clean_env.setenv("ACE_REDIS_URL", redis_url)
    clean_env.setenv("ACE_QUEUE_PREFIX", prefix)
    for name, value in cli_settings.items():
        clean_env.setenv(name, value)
    if cli_stamped:
        stamp_current_schema(redis_client, prefix)  # as this version's first process did
    return clean_env
