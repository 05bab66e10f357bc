"""Headless Chromium driven over the DevTools protocol: open a page, read it, click, type, screenshot.

Debian's chromium, started with a private profile and ``--remote-debugging-port=0``;
the port it picked is read from the profile's ``DevToolsActivePort`` file. One page
target, one websocket, commands sent and answered in order (a page's events are
read and dropped). Enough for the console's browser tests, and no dependency beyond
``websockets``, which uvicorn already brings.
"""

from __future__ import annotations

import base64
import itertools
import json
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from websockets.sync.client import ClientConnection, connect

from tests.support.browser import HEADLESS_FLAGS, chromium
from tests.support.processes import terminate
from tests.support.waiting import wait_for


class BrowserError(AssertionError):
    """The page did not do what the test expected (a script threw, an element is missing)."""


class Page:
    """One Chromium tab: navigate, evaluate JavaScript, click, fill, wait, screenshot."""

    def __init__(self, socket: ClientConnection) -> None:
        self._socket = socket
        self._ids = itertools.count(1)

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        """Send one DevTools command and return its result (BrowserError on a protocol error)."""
        command_id = next(self._ids)
        self._socket.send(json.dumps({"id": command_id, "method": method, "params": params}))
        while True:
            message = json.loads(self._socket.recv(timeout=30))
            if message.get("id") == command_id:
                if "error" in message:
                    raise BrowserError(f"{method}: {message['error']}")
                result: dict[str, Any] = message.get("result", {})
                return result

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (awaited if it is a promise)."""
        result = self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression!r} threw: {result['exceptionDetails'].get('exception', result)}")
        return result.get("result", {}).get("value")

    def goto(self, url: str) -> None:
        """Open ``url`` and wait until the page has loaded."""
        self.send("Page.navigate", url=url)
        self.wait_loaded(url)

    def wait_loaded(self, what: str = "the page") -> None:
        # After a navigation the old document may still answer "complete": wait for the new one.
        time.sleep(0.05)
        wait_for(
            lambda: self.evaluate("document.readyState") == "complete", 20, f"{what} to load", every=0.05
        )

    def url(self) -> str:
        return str(self.evaluate("location.href"))

    def text(self, selector: str = "body") -> str:
        """The visible text of the first element ``selector`` matches (BrowserError if none does)."""
        found = self.evaluate(f"(e => e && e.innerText)(document.querySelector({json.dumps(selector)}))")
        if found is None:
            raise BrowserError(f"no element matches {selector!r} on {self.url()}")
        return str(found)

    def count(self, selector: str) -> int:
        return int(self.evaluate(f"document.querySelectorAll({json.dumps(selector)}).length"))

    def click(self, selector: str) -> None:
        """Click the first element ``selector`` matches, and wait for a page it opens to load."""
        clicked = self.evaluate(
            "(e => { if (!e) return false; e.click(); return true; })"
            f"(document.querySelector({json.dumps(selector)}))"
        )
        if not clicked:
            raise BrowserError(f"nothing to click: no element matches {selector!r} on {self.url()}")
        self.wait_loaded(f"the page after clicking {selector!r}")

    def fill(self, selector: str, value: str) -> None:
        """Set the value of the input ``selector`` matches, as typing would."""
        filled = self.evaluate(
            f"(e => {{ if (!e) return false; e.value = {json.dumps(value)}; "
            "e.dispatchEvent(new Event('input', {bubbles: true})); return true; })"
            f"(document.querySelector({json.dumps(selector)}))"
        )
        if not filled:
            raise BrowserError(f"no input matches {selector!r} on {self.url()}")

    def screenshot(self, path: Path) -> bytes:
        """Write a PNG of the whole page to ``path`` and return its bytes."""
        data = base64.b64decode(
            self.send("Page.captureScreenshot", format="png", captureBeyondViewport=True)["data"]
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return data


@contextmanager
def headless_chromium(profile: Path, *, headers: dict[str, str] | None = None) -> Iterator[Page]:
    """A headless Chromium with a private ``profile``, its first tab sending ``headers`` on every request."""
    profile.mkdir(parents=True, exist_ok=True)
    process = subprocess.Popen(
        [
            chromium(),
            *HEADLESS_FLAGS,
            "--no-default-browser-check",
            "--remote-debugging-port=0",
            "--remote-allow-origins=*",
            "--window-size=1400,1000",
            f"--user-data-dir={profile}",
            "about:blank",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        port_file = profile / "DevToolsActivePort"

        def debugging_port() -> str | None:
            if process.poll() is not None:
                raise BrowserError(f"chromium exited with {process.returncode} before it listened")
            text = port_file.read_text() if port_file.exists() else ""
            return text.split("\n")[0] if text.strip() else None

        port = wait_for(debugging_port, 30, "chromium to open its debugging port", every=0.05)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as answer:
            targets = json.loads(answer.read())
        tab = next(target for target in targets if target.get("type") == "page")
        with connect(tab["webSocketDebuggerUrl"], max_size=64 * 2**20) as socket:
            page = Page(socket)
            page.send("Page.enable")
            page.send("Network.enable")
            if headers:
                page.send("Network.setExtraHTTPHeaders", headers=headers)
            yield page
    finally:
        terminate(process, timeout=10)
