"""Settings every test shares, applied before any test module is imported."""

from __future__ import annotations

import os

import pytest

# Before anything imports huggingface_hub: no test may reach the network, and a model
# name that is not on disk must fail at once instead of retrying the hub for a minute.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

# Read by browser-use when it is imported (logging) and on every access of its CONFIG (the rest):
# no telemetry, cloud sync, version check or extension download, and the root logger's handlers
# left alone. Each browser-use test also gets a config folder of its own.
BROWSER_USE_OFFLINE = {
    "ANONYMIZED_TELEMETRY": "false",
    "BROWSER_USE_CLOUD_SYNC": "false",
    "BROWSER_USE_VERSION_CHECK": "false",
    "BROWSER_USE_CLOUD_HINTS": "false",
    "BROWSER_USE_DISABLE_EXTENSIONS": "true",
    "BROWSER_USE_SETUP_LOGGING": "false",
}
os.environ.update(BROWSER_USE_OFFLINE)

# The suite's own variable, not a setting of ace-workers: read once, then taken out of the
# environment before any test runs, so neither WorkerSettings.from_env() (which refuses an
# unknown ACE_* variable) nor a command a test starts (which inherits the environment) sees it.
_TEST_REDIS_URL = os.environ.pop("ACE_TEST_REDIS_URL", None)


@pytest.fixture(scope="session")
def test_redis_url_override() -> str | None:
    """$ACE_TEST_REDIS_URL as the run found it, or None."""
    return _TEST_REDIS_URL
