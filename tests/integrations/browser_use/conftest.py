"""browser-use offline: its settings off the network, a local site, real chromium (the scripted chat
model is in tests/support/browser_agents.py)."""

from __future__ import annotations

import functools
import http.server
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.browser import BROWSER_USE_OFFLINE, chromium

PAGE = """<html><head><title>Zorb puzzles</title></head>
<body><h1>Zorb puzzles</h1><p>Nothing on this page says how to solve them.</p></body></html>"""


@pytest.fixture(autouse=True)
def _browser_use_offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name, value in BROWSER_USE_OFFLINE.items():  # as tests/conftest.py set them, whatever a test did
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("BROWSER_USE_CONFIG_DIR", str(tmp_path / "browseruse-config"))
    # Each agent keeps its files and screenshots in a folder under the temp dir.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of a local page served by http.server."""
    root = tmp_path_factory.mktemp("site")
    (root / "index.html").write_text(PAGE)
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/index.html"
    finally:
        server.shutdown()
        server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def browser_session(tmp_path: Path) -> Any:
    """A browser-use session on headless chromium, private profile, no sandbox (tests may run as root)."""
    from browser_use import BrowserProfile, BrowserSession

    profile = BrowserProfile(
        executable_path=chromium(),
        headless=True,
        chromium_sandbox=False,
        user_data_dir=tmp_path / "chromium-profile",
        downloads_path=tmp_path / "downloads",
        enable_default_extensions=False,
    )
    return BrowserSession(browser_profile=profile)
