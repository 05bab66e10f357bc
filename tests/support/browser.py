"""Debian's chromium, for the tests that drive a real headless browser."""

from __future__ import annotations

import shutil

import pytest


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
