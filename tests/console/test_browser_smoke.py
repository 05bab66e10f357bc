"""The console in headless Chromium: the skillbooks page loads, signed in, and is photographed."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cdp import headless_chromium
from tests.support.console import SCREENSHOTS, RunningConsole


@pytest.mark.slow
@pytest.mark.browser
def test_the_skillbooks_page_in_chromium_lists_the_learned_skillbook(
    console: RunningConsole, tmp_path: Path
) -> None:
    with headless_chromium(tmp_path / "profile", headers=console.basic_auth_header()) as page:
        page.goto(f"{console.url}/skillbooks")
        assert page.count('tr[data-skillbook="support"]') == 1
        assert "support" in page.text("#skillbooks")
        png = page.screenshot(SCREENSHOTS / "skillbooks.png")
    assert png.startswith(b"\x89PNG")
