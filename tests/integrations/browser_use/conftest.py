"""browser-use offline: its settings off the network, a local site, a scripted chat model, real chromium."""

from __future__ import annotations

import functools
import http.server
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser_use.llm.views import ChatInvokeCompletion

from tests.support.browser import chromium

from ...conftest import BROWSER_USE_OFFLINE

PAGE = """<html><head><title>Zorb puzzles</title></head>
<body><h1>Zorb puzzles</h1><p>Nothing on this page says how to solve them.</p></body></html>"""


@pytest.fixture(autouse=True)
def _browser_use_offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name, value in BROWSER_USE_OFFLINE.items():  # as tests/conftest.py set them, whatever a test did
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("BROWSER_USE_CONFIG_DIR", str(tmp_path / "browseruse-config"))
    # Each agent keeps its files and screenshots in a folder under the temp dir.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))


class ScriptedChatModel:
    """A ``browser_use.llm`` chat model that answers each call with the next scripted step.

    Each step is the JSON of the agent's output (thinking, goals, actions);
    it is validated into the ``output_format`` model the agent asks for, so a
    script the library would reject fails here as it would from a provider.
    """

    _verified_api_keys = True  # nothing to verify: no API key, no network
    model = "scripted"

    def __init__(self, steps: list[dict[str, Any]]) -> None:
        self.steps = list(steps)
        self.prompts: list[str] = []

    @property
    def provider(self) -> str:
        return "scripted"

    @property
    def name(self) -> str:
        return "scripted"

    @property
    def model_name(self) -> str:
        return self.model

    async def ainvoke(self, messages: list[Any], output_format: Any = None, **kwargs: Any) -> Any:
        self.prompts.append("\n".join(str(getattr(m, "text", m)) for m in messages))
        if not self.steps:
            raise AssertionError("the scripted chat model ran out of steps")
        step = self.steps.pop(0)
        completion = output_format.model_validate(step) if output_format is not None else str(step)
        return ChatInvokeCompletion(completion=completion, usage=None)


def navigate_then_give_up(url: str, answer: str = "no idea") -> list[dict[str, Any]]:
    """Open ``url``, find nothing, and finish reporting failure with ``answer``."""
    return [
        {
            "thinking": "The puzzle may be explained on the site.",
            "evaluation_previous_goal": "Starting.",
            "memory": "Nothing yet.",
            "next_goal": "Open the puzzle page.",
            "action": [{"navigate": {"url": url}}],
        },
        {
            "thinking": "The page has no rule for zorb puzzles.",
            "evaluation_previous_goal": "The page opened but explains nothing.",
            "memory": "Visited the puzzle page.",
            "next_goal": "Give up.",
            "action": [{"done": {"text": answer, "success": False}}],
        },
    ]


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


# Options of every agent in these tests: no screenshots sent to the (scripted) model and no
# judge call after the run (the script answers the agent's steps only).
AGENT_OPTIONS: dict[str, Any] = {"use_vision": False, "use_judge": False}
