"""browser-use kept off the network, and Debian's chromium for the tests that drive a headless browser."""

from __future__ import annotations

import shutil

import pytest

# Read by browser-use when it is imported (logging) and on every access of its CONFIG (the rest):
# no telemetry, cloud sync, version check or extension download, and the root logger's handlers
# left alone. tests/conftest.py sets them for the whole run, the browser-use tests again per test.
BROWSER_USE_OFFLINE = {
    "ANONYMIZED_TELEMETRY": "false",
    "BROWSER_USE_CLOUD_SYNC": "false",
    "BROWSER_USE_VERSION_CHECK": "false",
    "BROWSER_USE_CLOUD_HINTS": "false",
    "BROWSER_USE_DISABLE_EXTENSIONS": "true",
    "BROWSER_USE_SETUP_LOGGING": "false",
}


# How the tests start chromium: headless, and without its sandbox, which refuses to start as root.
HEADLESS_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--no-first-run",
)


def chromium() -> str:
    """The chromium executable; the test fails (never skips) without it."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.fail(
            "chromium is not installed: 'apt-get install -y chromium' (`make browser` and `make test` "
            "install it)",
            pytrace=False,
        )
    return found
